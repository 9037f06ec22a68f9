"""(c,k)-safety: worst-case disclosure against k pieces of background knowledge.

Martin, Kifer, Machanavajjhala, Gehrke, Halpern, *Worst-Case Background Knowledge for
Privacy-Preserving Data Publishing*, ICDE 2007 (spec: ``ck_safety.md``).

An adversary knows the release B (which individuals are in each bucket and the bucket's
multiset of sensitive values, SVPI) and k pieces of background knowledge. Two languages:

* ``knowledge_kind="implications"`` — conjunctions of k basic implications (the paper's L^k_basic;
  any property of the table is expressible). By Theorem 9 the worst case is k simple
  implications A_i → A with a common consequent, and

      max disclosure = 1 / (1 + R*(k)),
      R*(k) = min over A's bucket j and h_0 + … + h_{|B|-1} = k of
              (n_j / n_j(s^0)) · M1(b_j, h_j + 1) · ∏_{i≠j} M1(b_i, h_i)

  with M1 the per-bucket minimum of Lemma 12 (MINIMIZE1) and the cross-bucket minimum the
  *corrected* MINIMIZE2 of the spec.
* ``knowledge_kind="negations"`` — k negated atoms "t_p[S] ≠ s" (ℓ-diversity-style):
  max disclosure = max_b n_b(s^0) / (n_b − Σ_{j=1..k} n_b(s^j)).

A release is **(c,k)-safe** when the maximum disclosure is **< c** (equal is unsafe).

How it is computed (see :mod:`fastpriv._kernels.ck_safety`): the frequency profiles of the
release (``rel.indptr/codes/counts``, already sorted by count) are de-duplicated by
(n_b, top-(k+1) counts); bounds discard profiles that cannot be among the k+1 best buckets
for any number of atoms; M1 is computed for the rest by an O(k³) DP; a knapsack with
back-pointers runs on at most ~k² candidate buckets. A whole curve k = 0..K costs the same as
its last point. Float64 throughout (products of ≤ 2k+2 ratios of integers); ``exact=True``
redoes the final stage with :class:`fractions.Fraction`.

Max disclosure is never 0: every SVPI bucket has a most frequent value, so it is at least
max_b n_b(s^0)/n_b > 0 and R* is always finite (≤ n_b/n_b(s^0) − 1 … ≤ max n_b).

Examples
--------
>>> import fastpriv as fp
>>> rel = fp.Release.from_groups([["flu", "lung_cancer", "mumps", "flu", "lung_cancer"],
...                               ["flu", "breast_cancer", "flu", "heart_disease",
...                                "ovarian_cancer"]])
>>> [str(fp.ck_safety.max_disclosure(rel, k=k, exact=True).value) for k in range(4)]
['2/5', '2/3', '1', '1']

"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ._validation import check_choice, check_int, check_threshold, kernel_array
from .errors import InputError, InputTypeError
from .results import Result, Witness

__all__ = [
    "KNOWLEDGE",
    "Atom",
    "CkWitness",
    "DisclosureResult",
    "saturation_k",
    "max_disclosure",
    "disclosure_curve",
    "is_safe",
    "max_safe_k",
    "CkAudit",
    "audit",
    "needed_groups",
]

#: The two background-knowledge languages.
KNOWLEDGE = ("implications", "negations")

# Bounds prune profiles before the exact M1 DP when there are at least this many distinct
# profiles and k + 1 >= _PRUNE_MIN_H (below, the O(k³) DP vectorised over profiles costs
# about as little as the bounds themselves; measured in benchmarks/bench_ck_safety.py).
_PRUNE_MIN_PROFILES = 4096
_PRUNE_MIN_H = 12
# M1 work (profiles × (k+2)³) above which the kernel is split over threads.
_THREAD_MIN_WORK = 2_000_000
# Relative distance below which a float comparison is re-decided with Fractions.
_TIE_RTOL = 1e-9


# ============================================================================ results
@dataclass(frozen=True)
class Atom:
    """The atom "person ``person`` of group ``group`` has sensitive value ``value``".

    ``person`` is an index 0..n_g−1 inside the group (people of a group are exchangeable,
    so any distinct people realise the witness); ``row`` is the input row of that person
    when the release was built from a table (the ``person``-th row of the group), else None.
    """

    group: int
    person: int
    value: Any
    group_label: Any = None
    row: int | None = None

    def __str__(self) -> str:
        who = f"person {self.person} of group {self.group_label!r}"
        if self.row is not None:
            who += f" (row {self.row})"
        return f"{who} has {self.value!r}"

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"group": self.group, "group_label": _jsonable(self.group_label),
                "person": self.person, "value": _jsonable(self.value), "row": self.row}


@dataclass(frozen=True, eq=False)
class CkWitness(Witness):
    """Atoms realising the worst case (Lemma 12's structure).

    For ``knowledge="implications"`` the adversary's knowledge is ∧_i (A_i → A) with A =
    ``consequent`` and A_i = ``antecedents`` (equivalently: "A, or none of the A_i"). Person
    i of a bucket with k_i atoms gets the atoms s^0 … s^{k_i−1} of that bucket; A is the
    first atom of person 0 of its bucket. For ``knowledge="negations"`` the knowledge is
    ∧_i ¬A_i with A_i = ``antecedents`` (all on the consequent's person).

    Atoms on values that do not occur in their bucket (they arise only when k exceeds what is
    needed to reach disclosure 1) are trivially true knowledge and are left out, so
    ``antecedents`` may hold fewer than k atoms.
    """

    knowledge_kind: str
    consequent: Atom
    antecedents: tuple[Atom, ...]
    groups: tuple[int, ...]
    group_labels: tuple[Any, ...]

    def formulas(self) -> list[str]:
        """Return the knowledge as readable formulas."""
        if self.knowledge_kind == "negations":
            return [f"NOT ({a})" for a in self.antecedents]
        return [f"({a}) -> ({self.consequent})" for a in self.antecedents]

    def summary(self) -> str:
        """One short line: the target atom and how much knowledge realises the worst case."""
        c = self.consequent
        people = {(a.group, a.person) for a in self.antecedents}
        what = "negated atoms" if self.knowledge_kind == "negations" else "antecedent atoms"
        row = "" if c.row is None else f" (row {c.row})"
        return (f"A: person {c.person}{row} has {c.value!r}; {len(self.antecedents)} {what} "
                f"on {len(people)} people in {len(self.groups)} group(s)")

    def to_dict(self) -> dict:
        """JSON-ready form (atoms, groups and readable formulas)."""
        return {"knowledge_kind": self.knowledge_kind, "consequent": self.consequent.to_dict(),
                "antecedents": [a.to_dict() for a in self.antecedents],
                "groups": list(self.groups),
                "group_labels": [_jsonable(x) for x in self.group_labels],
                "formulas": self.formulas()}


@dataclass(frozen=True, eq=False)
class DisclosureResult(Result):
    """Maximum disclosure of a release against k pieces of knowledge.

    Attributes
    ----------
    value : float or Fraction
        max over atoms A and knowledge φ of Pr(A | B ∧ φ) = 1 / (1 + min_ratio).
    min_ratio : float or Fraction
        R* (implications: the minimised Pr(¬A ∧ ∧¬A_i | B) / Pr(A | B); negations: the same
        ratio 1/value − 1 for the worst bucket).
    witness : CkWitness
        Atoms realising ``value``.
    k : int
    knowledge_kind : str
    exact : bool
        Whether ``value``/``min_ratio`` are exact Fractions.

    """

    value: Any
    min_ratio: Any
    witness: CkWitness
    k: int
    knowledge_kind: str
    exact: bool = False

    @property
    def params(self) -> dict:
        """The parameters: ``k``, ``knowledge_kind``, ``exact``."""
        return {"k": self.k, "knowledge_kind": self.knowledge_kind, "exact": self.exact}

    def to_dict(self) -> dict:
        """JSON-ready form; Fractions become ``{"frac": "p/q", "float": x}``."""
        return {"model": "ck_safety", "knowledge_kind": self.knowledge_kind, "k": self.k,
                "value": _num(self.value), "min_ratio": _num(self.min_ratio),
                "exact": self.exact, "witness": self.witness.to_dict()}

    def summary(self) -> str:
        """One line: the maximum disclosure at k and the knowledge that realises it."""
        return (f"max disclosure {float(self.value):.4g} against k={self.k} "
                f"{self.knowledge_kind}; {self.witness.summary()}")


def _num(x: Any) -> Any:
    if isinstance(x, Fraction):
        return {"frac": f"{x.numerator}/{x.denominator}" if x.denominator != 1
                else str(x.numerator), "float": float(x)}
    return float(x)


def _jsonable(x: Any) -> Any:
    if isinstance(x, tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    return str(x)


# ============================================================================ validation
def _check_knowledge(knowledge_kind: Any) -> str:
    if not isinstance(knowledge_kind, str):
        raise InputTypeError(f"knowledge_kind must be a string, one of "
                             f"{', '.join(map(repr, KNOWLEDGE))}; "
                             f"got {type(knowledge_kind).__name__}")
    return check_choice(knowledge_kind, "knowledge_kind", KNOWLEDGE)


def _release(data: Any, read: dict) -> Any:
    from ._data import as_release

    return as_release(data, svpi_only="(c,k)-safety (Martin et al.)", **read)


def _exact_threshold(c: Any) -> Fraction:
    """Return c as an exact Fraction; a float is read as the decimal it prints as (0.8 → 4/5)."""
    if isinstance(c, Fraction):
        return c
    if isinstance(c, numbers.Integral):
        return Fraction(int(c))
    if isinstance(c, numbers.Rational):
        return Fraction(int(c.numerator), int(c.denominator))
    return Fraction(repr(float(c)))


# ============================================================================ core
class _Profiles:
    """The release's arrays, normalised once for the kernels."""

    def __init__(self, rel: Any) -> None:
        self.rel = rel
        self.indptr = kernel_array(rel.indptr, np.int64)
        self.counts = kernel_array(rel.counts, np.int64)
        self.sizes = kernel_array(rel.sizes, np.int64)
        # disclosure is 1 for every k >= min_b d_b - 1 (one person, every value of a bucket)
        self.saturation_k = int(rel.distinct.min()) - 1


def _m1_exact(n: int, top: list[int], H: int) -> tuple[list[Fraction], Any]:
    """Exact M1(h), h = 0..H, and a function returning the arg-min partition of h.

    Same recurrence as the fast kernel (B_i(m, r) = min(B_i(m−1, r),
    f(i, m)·B_{i+1}(min(m, r−m), r−m))), in Fractions, memoised; None stands for +inf.
    """
    pref = [0]
    for j in range(H):
        pref.append(pref[-1] + (top[j] if j < len(top) else 0))
    memo: dict[tuple[int, int, int], tuple[Any, int]] = {}

    def f(i: int, m: int) -> Fraction:
        num = n - i - pref[m]
        return Fraction(num, n - i) if num > 0 else Fraction(0)

    def B(i: int, m: int, r: int) -> tuple[Any, int]:
        # returns (value, first part) ; value None = infeasible
        if r == 0:
            return Fraction(1), 0
        if i >= n or m == 0:
            return None, 0
        key = (i, m, r)
        got = memo.get(key)
        if got is not None:
            return got
        best, arg = B(i, m - 1, r)
        if m <= r:
            rem = r - m
            sub, _ = B(i + 1, min(m, rem), rem)
            if sub is not None:
                cand = f(i, m) * sub
                if best is None or cand < best:
                    best, arg = cand, m
        memo[key] = (best, arg)
        return best, arg

    def partition(h: int) -> list[int]:
        parts: list[int] = []
        i, m, r = 0, h, h
        while r > 0:
            _, first = B(i, m, r)
            parts.append(first)
            r -= first
            m = min(first, r)
            i += 1
        return parts

    # fill bottom-up (persons from the last, sums from small) to keep the recursion shallow
    for i in range(min(H, n) - 1, -1, -1):
        for r in range(1, H - i + 1):
            B(i, r, r)
    vals = [Fraction(1)] + [B(0, h, h)[0] for h in range(1, H + 1)]
    return vals, partition


def _argmin_partition(n: int, top: list[int], h: int) -> list[int]:
    """Return an arg-min partition of M1(h) (exact): the atoms per person of Lemma 12."""
    _, partition = _m1_exact(n, top, h)
    return partition(h)


def _candidates(prof: _Profiles, Keff: int, *, exact: bool,
                prune: bool | None = None) -> tuple[np.ndarray, ...]:
    """Select the buckets the implication knapsack at ``Keff`` may use (MINIMIZE2).

    Returns ``(pid, keys, mult, rows, u, copies)``: every group's profile, the distinct
    profiles (n_g, c_0 … c_{H-1}) and their multiplicities, the profiles kept by the
    pruning bound, their M1 tables ``u`` and how many buckets of each the knapsack needs.
    """
    from ._kernels.ck_safety import (
        dedupe_profiles,
        m1_profiles,
        prune_profiles,
        select_candidates,
    )

    H = Keff + 1
    _check_m1_memory(H, Keff, prof.saturation_k)
    pid, keys, mult = dedupe_profiles(prof.indptr, prof.counts, prof.sizes, H)
    P = keys.shape[0]
    keys_k = kernel_array(keys, np.int64)
    mult_k = kernel_array(mult, np.int64)
    if prune is None:
        prune = P >= _PRUNE_MIN_PROFILES and H >= _PRUNE_MIN_H
    if prune:
        keep = prune_profiles(keys_k, mult_k, Keff)
        rows = np.flatnonzero(keep).astype(np.int64)
    else:
        rows = np.arange(P, dtype=np.int64)
    rows_k = kernel_array(rows, np.int64)
    u = _m1_threaded(m1_profiles, keys_k, rows_k, H)
    copies = select_candidates(kernel_array(u, np.float64), keys_k, rows_k, mult_k, Keff,
                               float(_TIE_RTOL if exact else 0.0))
    return pid, keys, mult, rows, u, copies


def _implications(prof: _Profiles, K: int, *, exact: bool, witness_t: int | None,
                  prune: bool | None = None) -> tuple[list, list | None]:
    """Compute R*(t) for t = 0..K (floats, or Fractions when exact) and a witness structure.

    The structure (at ``witness_t``) is a list of (group, h, is_A): bucket, number of atoms
    there and whether it holds A.
    """
    from ._kernels.ck_safety import knapsack_candidates

    Keff = min(K, prof.saturation_k)
    pid, keys, _, rows, u, copies = _candidates(prof, Keff, exact=exact, prune=prune)
    cand_q = np.repeat(np.arange(rows.shape[0], dtype=np.int64), copies)
    # copy index of each candidate within its profile (0, 1, …)
    starts = np.cumsum(copies) - copies
    copy_idx = np.arange(cand_q.shape[0], dtype=np.int64) - np.repeat(starts, copies)
    cand_p = rows[cand_q]
    if exact:
        R, sol = _exact_knapsack(keys, cand_p, Keff, witness_t)
    else:
        uc = kernel_array(u[cand_q], np.float64)
        ratio = kernel_array(keys[cand_p, 0] / keys[cand_p, 1], np.float64)
        V, hu, hv, av = knapsack_candidates(uc, ratio, Keff)
        R = [float(x) for x in V]
        sol = None
        if witness_t is not None:
            sol = _backtrack(hu, hv, av, min(witness_t, Keff))
    R = R + [Fraction(0) if exact else 0.0] * (K - Keff)
    if sol is None:
        return R, None
    # map candidate indices to groups
    out = []
    groups_of: dict[int, np.ndarray] = {}
    for j, h, is_a in sol:
        p = int(cand_p[j])
        if p not in groups_of:
            groups_of[p] = np.flatnonzero(pid == p)
        g = int(groups_of[p][copy_idx[j]])
        out.append((g, h, is_a))
    return R, out


#: memory the implication tables may take before a request is refused (bytes)
MAX_TABLE_BYTES = 4 << 30


def _check_m1_memory(H: int, k: int, sat: int) -> None:
    """Refuse, before allocating, an M1 table that cannot fit.

    The M1 recurrence keeps two (H + 1)² tables per lane of profiles (8 bytes an entry), so
    k in the tens of thousands — possible only with a group of that many distinct values —
    needs terabytes.
    """
    from ._kernels.ck_safety import LANES

    need = 2 * (H + 1) ** 2 * LANES * 8
    if need > MAX_TABLE_BYTES:
        raise InputError(f"k = {k:,} implications: the MINIMIZE1 tables need "
                         f"{need / 2**30:,.1f} GiB (more than {MAX_TABLE_BYTES / 2**30:g} "
                         "GiB); ask for a smaller k (the disclosure is 1 from k = "
                         f"{sat:,} on, the least diverse group's distinct values minus one) "
                         "or use knowledge='negations'")


def _m1_threaded(m1_profiles: Any, keys: np.ndarray, rows: np.ndarray, H: int) -> np.ndarray:
    """Run the (nogil) M1 kernel on chunks of ``rows`` in threads when the work is large."""
    work = rows.shape[0] * (H + 1) ** 3
    threads = _n_threads()
    if threads <= 1 or work < _THREAD_MIN_WORK:
        return m1_profiles(keys, rows, H)
    from concurrent.futures import ThreadPoolExecutor

    bounds = np.linspace(0, rows.shape[0], threads + 1).astype(np.int64)
    with ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(lambda ab: m1_profiles(keys, rows[ab[0]:ab[1]], H),
                              zip(bounds[:-1], bounds[1:], strict=True)))
    return np.concatenate(parts)


def _n_threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _backtrack(hu: np.ndarray, hv: np.ndarray, av: np.ndarray, t: int) -> list:
    sol = []
    in_v = True
    for j in range(hu.shape[0] - 1, -1, -1):
        if in_v:
            h = int(hv[j, t])
            if av[j, t]:
                sol.append((j, h, True))
                in_v = False
            elif h:
                sol.append((j, h, False))
        else:
            h = int(hu[j, t])
            if h:
                sol.append((j, h, False))
        t -= h
    return sol[::-1]


def _exact_knapsack(keys: np.ndarray, cand_p: np.ndarray, K: int,
                    witness_t: int | None) -> tuple[list, list | None]:
    H = K + 1
    cache: dict[int, list[Fraction]] = {}
    us, ratios = [], []
    for p in cand_p.tolist():
        if p not in cache:
            row = keys[p].tolist()
            cache[p], _ = _m1_exact(row[0], row[1:], H)
        us.append(cache[p])
        ratios.append(Fraction(int(keys[p, 0]), int(keys[p, 1])))
    U: list[Any] = [Fraction(1)] + [None] * K
    V: list[Any] = [None] * (K + 1)
    back = []
    for u, rj in zip(us, ratios, strict=True):
        nb = []
        for t in range(K, -1, -1):
            nu = nv = None
            bu = bv = 0
            ba = False
            for h in range(t + 1):
                x = U[t - h]
                if x is not None:
                    c = x * u[h]
                    if nu is None or c < nu:
                        nu, bu = c, h
                    c = x * rj * u[h + 1]
                    if nv is None or c < nv:
                        nv, bv, ba = c, h, True
                y = V[t - h]
                if y is not None:
                    c = y * u[h]
                    if nv is None or c < nv:
                        nv, bv, ba = c, h, False
            U[t], V[t] = nu, nv
            nb.append((t, bu, bv, ba))
        back.append({t: (bu, bv, ba) for t, bu, bv, ba in nb})
    sol = None
    if witness_t is not None:
        t = min(witness_t, K)
        sol = []
        in_v = True
        for j in range(len(back) - 1, -1, -1):
            bu, bv, ba = back[j][t]
            if in_v:
                h = bv
                if ba:
                    sol.append((j, h, True))
                    in_v = False
                elif h:
                    sol.append((j, h, False))
            else:
                h = bu
                if h:
                    sol.append((j, h, False))
            t -= h
        sol = sol[::-1]
    return list(V), sol


def _group_top(rel: Any, g: int, H: int) -> tuple[int, list[int], list[int]]:
    a, b = int(rel.indptr[g]), int(rel.indptr[g + 1])
    counts = rel.counts[a:b].tolist()
    codes = rel.codes[a:b].tolist()
    return int(rel.sizes[g]), counts[:H], codes[:H]


def _atom(rel: Any, g: int, person: int, code: int) -> Atom:
    row = None
    if rel.row_group is not None:
        row = int(rel.rows_of_group(g)[person])
    return Atom(group=g, person=person, value=rel.values[code],
                group_label=rel.group_label(g), row=row)


def _implication_witness(rel: Any, sol: list) -> CkWitness:
    consequent = None
    antecedents: list[Atom] = []
    groups: list[int] = []
    for g, h, is_a in sol:
        atoms_h = h + 1 if is_a else h
        n, counts, codes = _group_top(rel, g, atoms_h)
        parts = _argmin_partition(n, counts, atoms_h)
        groups.append(g)
        for person, m in enumerate(parts):
            for j in range(m):
                if j >= len(codes):  # value absent from the bucket: trivially true, omit
                    break
                atom = _atom(rel, g, person, codes[j])
                if is_a and person == 0 and j == 0:
                    consequent = atom
                else:
                    antecedents.append(atom)
    assert consequent is not None
    order = sorted(set(groups), key=groups.index)
    return CkWitness("implications", consequent, tuple(antecedents), tuple(order),
                   tuple(rel.group_label(g) for g in order))


def _negation_witness(rel: Any, g: int, k: int) -> CkWitness:
    n, counts, codes = _group_top(rel, g, k + 1)
    cons = _atom(rel, g, 0, codes[0])
    ants = tuple(_atom(rel, g, 0, c) for c in codes[1:k + 1])
    return CkWitness("negations", cons, ants, (g,), (rel.group_label(g),))


def _negations(prof: _Profiles, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from ._kernels.ck_safety import negation_curve

    Keff = min(K, max(prof.saturation_k, 0))
    num, den, grp = negation_curve(prof.indptr, prof.counts, prof.sizes, Keff)
    if K > Keff:
        pad = K - Keff
        num = np.concatenate([num, np.full(pad, num[-1])])
        den = np.concatenate([den, np.full(pad, den[-1])])
        grp = np.concatenate([grp, np.full(pad, grp[-1])])
    return num, den, grp


# ============================================================================ public API
def max_disclosure(data: Any, *, k: int, knowledge_kind: str = "implications",
                   exact: bool = False, **read: Any) -> DisclosureResult:
    """Maximum disclosure of ``data`` against ``k`` pieces of background knowledge.

    Parameters
    ----------
    data : Release or table-like
        An SVPI release (built from groups, a table, counts or a stream), or a table read
        with the ``read`` keywords (``sensitive=``, ``group=``/``qi=``, ``weight=``,
        ``nulls=``), as for every function of this module.
    k : int
        Number of basic implications (``"implications"``) or negated atoms
        (``"negations"``) the adversary knows, ``k >= 0``.
    knowledge_kind : {"implications", "negations"}
        The adversary's knowledge language.
    exact : bool, default False
        Return ``value`` and ``min_ratio`` as :class:`fractions.Fraction`.
    **read
        How to read a table (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    DisclosureResult
        ``value`` = 1 / (1 + R*), ``min_ratio`` = R*, ``witness`` = realising atoms.

    Notes
    -----
    Implications (Theorem 9, Lemma 12, corrected MINIMIZE2 of the spec)::

        R*(k) = min_{j, Σ h_i = k} (n_j / n_j(s^0)) · M1(b_j, h_j+1) · ∏_{i≠j} M1(b_i, h_i)

    Negations: max_b n_b(s^0) / (n_b − Σ_{j=1..k} n_b(s^j)) (= 1 once k ≥ d_b − 1).
    The value is never 0 (R* is finite): it is at least max_b n_b(s^0)/n_b.

    Examples
    --------
    >>> import fastpriv as fp
    >>> rel = fp.Release.from_groups([["a", "a", "b", "c", "d"]])
    >>> r = fp.ck_safety.max_disclosure(rel, k=2, exact=True)
    >>> r.value, [str(a) for a in r.witness.antecedents]
    (Fraction(4, 5), ["person 1 of group 0 has 'a'", "person 2 of group 0 has 'a'"])

    """
    rel = _release(data, read)
    k = check_int(k, "k", minimum=0)
    knowledge_kind = _check_knowledge(knowledge_kind)
    return _disclosure(rel, _Profiles(rel), k, knowledge_kind, bool(exact), curve=False)[0]


def _disclosure(rel: Any, prof: _Profiles, k: int, knowledge: str,
                exact: bool, curve: bool = True) -> tuple[DisclosureResult, Any]:
    """Return :func:`max_disclosure` at ``k`` and the float curve k' = 0..k.

    One pass gives both: the knapsack and the negation scan produce every k' ≤ k at once.
    Past the saturation point s = min_b d_b − 1 the disclosure is 1 for every k, so the
    kernels run to min(k, s) only (a huge ``k`` costs nothing) and the curve is padded with
    ones; the result keeps the ``k`` that was asked for.
    """
    s = saturation_k(rel)
    if k > s:
        if curve:
            _check_curve_size(k)
        res, head = _disclosure(rel, prof, s, knowledge, exact, curve)
        return replace(res, k=k), (np.concatenate([head, np.ones(k - s)]) if curve else None)
    if knowledge == "negations":
        num, den, grp = _negations(prof, k)
        nk, dk, g = int(num[k]), int(den[k]), int(grp[k])
        if exact:
            value: Any = Fraction(nk, dk)
            ratio: Any = Fraction(dk - nk, nk)
        else:
            value, ratio = nk / dk, (dk - nk) / nk
        return (DisclosureResult(value, ratio, _negation_witness(rel, g, k), k, knowledge,
                                 exact), num / den)
    R, sol = _implications(prof, k, exact=exact, witness_t=k)
    r = R[k]
    value = (Fraction(1) / (1 + r)) if exact else 1.0 / (1.0 + r)
    curve = 1.0 / (1.0 + np.asarray([float(x) for x in R], dtype=np.float64))
    return (DisclosureResult(value, r, _implication_witness(rel, sol), k, knowledge, exact),
            curve)


def disclosure_curve(data: Any, *, k_max: int, knowledge_kind: str = "implications",
                     **read: Any) -> np.ndarray:
    """Max disclosure for every k = 0..k_max in one pass.

    The implication knapsack tracks "exactly t atoms" for every t ≤ k_max at once, and the
    per-profile M1 tables for k_max serve every smaller k, so the curve costs the same as
    ``max_disclosure(data, k=k_max)``. Returns a float64 array of length ``k_max + 1``
    (non-decreasing; 1 from k = min_b d_b − 1 on).
    """
    rel = _release(data, read)
    k_max = check_int(k_max, "k_max", minimum=0)
    knowledge = _check_knowledge(knowledge_kind)
    _check_curve_size(k_max)
    prof = _Profiles(rel)
    top = min(k_max, saturation_k(rel))        # 1 from the saturation point on
    if knowledge == "negations":
        num, den, _ = _negations(prof, top)
        curve = num / den
    else:
        R, _ = _implications(prof, top, exact=False, witness_t=None)
        curve = 1.0 / (1.0 + np.asarray(R, dtype=np.float64))
    return np.concatenate([curve, np.ones(k_max - top)]) if k_max > top else curve


#: the largest disclosure curve returned (entries); beyond it the request is refused
MAX_CURVE_LENGTH = 1 << 24


def saturation_k(data: Any, **read: Any) -> int:
    """Return the k from which the maximum disclosure is 1: s = min_b d_b − 1 (Martin et al.).

    With s pieces of knowledge an adversary rules out every value but one of the least
    diverse group's member (negations), or chains them (implications); more knowledge
    cannot raise a probability of 1.
    """
    return max(int(_release(data, read).distinct.min()) - 1, 0)


def _check_curve_size(k_max: int) -> None:
    if k_max + 1 > MAX_CURVE_LENGTH:
        raise InputError(f"k_max = {k_max:,}: a curve of {k_max + 1:,} values needs "
                         f"{8 * (k_max + 1) / 2**30:.1f} GiB; the disclosure is 1 from "
                         "saturation_k(data) on, so ask for k_max ≤ that (or use "
                         "max_disclosure, which accepts any k)")


def _exact_ratio(prof: _Profiles, t: int) -> Fraction:
    return _implications(prof, t, exact=True, witness_t=None)[0][t]


def _safe_from_ratio(R_float: float, thr: Fraction, exact_R: Any) -> bool:
    """R* > 1/c − 1, with near-ties decided by ``exact_R()`` (a Fraction)."""
    t = float(thr)
    if abs(R_float - t) > _TIE_RTOL * max(abs(t), abs(R_float)):
        return R_float > t
    return exact_R() > thr


def is_safe(data: Any, *, c: Any, k: int, knowledge_kind: str = "implications",
            **read: Any) -> bool:
    """Whether ``data`` is (c,k)-safe: max disclosure **strictly** below ``c``.

    Parameters
    ----------
    data : Release or table-like
        An SVPI release, or a table read with the ``read`` keywords.
    c : float, Fraction or int in (0, 1]
        Threshold. Ties are decided exactly: disclosure < c ⇔ R* > 1/c − 1, compared in
        Fractions whenever the float R* lies within 1e-9 (relative) of 1/c − 1. A binary
        float ``c`` is read as the shortest decimal that prints the same (``repr``), so
        ``c=0.8`` means exactly 4/5 and a disclosure of exactly 4/5 is unsafe.
    k : int
        Pieces of background knowledge, ``k >= 0``.
    knowledge_kind : {"implications", "negations"}
        The adversary's knowledge language.
    **read
        How to read a table (see :func:`fastpriv._data.as_release`).

    """
    rel = _release(data, read)
    check_threshold(c, "c")
    k = check_int(k, "k", minimum=0)
    knowledge = _check_knowledge(knowledge_kind)
    thr = 1 / _exact_threshold(c) - 1
    prof = _Profiles(rel)
    if knowledge == "negations":
        num, den, _ = _negations(prof, k)
        return Fraction(int(den[k]) - int(num[k]), int(num[k])) > thr
    R, _ = _implications(prof, k, exact=False, witness_t=None)
    return _safe_from_ratio(R[k], thr, functools.partial(_exact_ratio, prof, k))


def max_safe_k(data: Any, *, c: Any, knowledge_kind: str = "implications",
               k_limit: int | None = None, **read: Any) -> int | None:
    """Largest k for which ``data`` is (c,k)-safe (None if it is not even (c,0)-safe).

    Disclosure is non-decreasing in k and reaches 1 (unsafe for every c ≤ 1) at
    k = min_b d_b − 1, so the answer is < min_b d_b − 1. ``k_limit`` caps the search (the
    answer is then at most ``k_limit``). The curve is computed in one pass per doubling of
    the horizon (16, 32, …); ties against c are decided exactly as in :func:`is_safe`.
    """
    rel = _release(data, read)
    check_threshold(c, "c")
    knowledge = _check_knowledge(knowledge_kind)
    if k_limit is not None:
        k_limit = check_int(k_limit, "k_limit", minimum=0)
    thr = 1 / _exact_threshold(c) - 1
    prof = _Profiles(rel)
    bound = max(prof.saturation_k, 0)       # disclosure is 1 there: never safe
    top = bound if k_limit is None else min(bound, k_limit)
    if knowledge == "negations":
        num, den, _ = _negations(prof, top)
        best = None
        for t in range(top + 1):
            if Fraction(int(den[t]) - int(num[t]), int(num[t])) > thr:
                best = t
            else:
                break
        return best
    horizon = min(top, 16)
    while True:
        R, _ = _implications(prof, horizon, exact=False, witness_t=None)
        first_unsafe = None
        for t in range(horizon + 1):
            exact_t = functools.partial(_exact_ratio, prof, t)
            if not _safe_from_ratio(R[t], thr, exact_t):
                first_unsafe = t
                break
        if first_unsafe is not None:
            return None if first_unsafe == 0 else first_unsafe - 1
        if horizon >= top:
            return top
        horizon = min(top, horizon * 2)


@dataclass(frozen=True, eq=False)
class CkAudit(Result):
    """(c,k)-safety section of an audit: both knowledge languages at k and the curves 0..k.

    ``value`` is the larger of the two maximum disclosures at k; ``witness`` the knowledge
    that realises it.
    """

    k: int
    implications: DisclosureResult
    negations: DisclosureResult
    curve_implications: tuple[float, ...]
    curve_negations: tuple[float, ...]

    @property
    def value(self) -> float:
        """The worst maximum disclosure at k over both knowledge languages."""
        return float(self._worst.value)

    @property
    def _worst(self) -> DisclosureResult:
        return max((self.implications, self.negations), key=lambda r: float(r.value))

    @property
    def witness(self) -> CkWitness:
        """The knowledge realising :attr:`value`."""
        return self._worst.witness

    @property
    def params(self) -> dict:
        """The parameters: ``k``."""
        return {"k": self.k}

    def summary(self) -> str:
        """Two lines: the maximum disclosure at k under each knowledge language."""
        return "\n".join(r.summary() for r in (self.implications, self.negations))

    def rows(self) -> list[list[Any]]:
        """Table rows: knowledge, max disclosure at k, worst group, witness summary."""
        out = []
        for r in (self.implications, self.negations):
            w = r.witness
            out.append([f"k={self.k} {r.knowledge_kind}", float(r.value),
                        w.consequent.group_label, w.summary()])
        return out

    def to_dict(self) -> dict:
        """JSON-ready form (results with witnesses, and both curves indexed by k)."""
        return {"k": self.k, "implications": self.implications.to_dict(),
                "negations": self.negations.to_dict(),
                "curve": {"k": list(range(self.k + 1)),
                          "implications": list(self.curve_implications),
                          "negations": list(self.curve_negations)}}


def audit(data: Any, *, k: int, **read: Any) -> CkAudit:
    """Max disclosure at ``k`` for implications and negations, with the curves k = 0..``k``.

    This is what ``fastpriv audit ... --k K`` reports.
    """
    rel = _release(data, read)
    k = check_int(k, "k", minimum=0)
    prof = _Profiles(rel)
    imp, ci = _disclosure(rel, prof, k, "implications", False)
    neg, cn = _disclosure(rel, prof, k, "negations", False)
    return CkAudit(k, imp, neg, tuple(float(x) for x in ci), tuple(float(x) for x in cn))


def needed_groups(data: Any, *, k: int, **read: Any) -> np.ndarray:
    """Return the groups that :func:`audit` at ``k`` can depend on (sorted group ids).

    The fold of (c,k)-safety (:class:`fastpriv.folds.CkState`): ``audit`` of the release
    restricted to these groups gives the same values, curves and witness labels as on the
    whole release, and a group left out here is left out of any larger release's answer
    too, so partial selections merge (select again on their union). Kept: the least
    diverse group (the saturation point min_b d_b − 1), the worst group of the negation
    scan at every k' ≤ k, and, of every profile the implication knapsack may use
    (MINIMIZE2's candidate buckets, :func:`_candidates`), its first k + 1 groups — no
    solution uses more buckets. Ties keep the first group in key order, as ``audit``
    reports. The count is O(k³) at most, whatever the number of groups.
    """
    rel = _release(data, read)
    k = check_int(k, "k", minimum=0)
    prof = _Profiles(rel)
    Keff = min(k, max(prof.saturation_k, 0))
    keep = [np.array([int(np.argmin(rel.distinct))], dtype=np.int64)]
    keep.append(np.asarray(_negations(prof, Keff)[2], dtype=np.int64))
    pid, _, _, rows, _, copies = _candidates(prof, Keff, exact=False)
    for p in rows[np.asarray(copies) > 0]:
        keep.append(np.flatnonzero(pid == p)[:Keff + 1].astype(np.int64))
    return np.unique(np.concatenate(keep))


def warmup() -> None:
    """Run (c,k)-safety's entry points and its pruning (``fastpriv warmup``'s workload).

    The registry's ``warmup_workload`` of the model: :func:`audit`, :func:`is_safe` and
    :func:`max_safe_k` on a small release, and :func:`audit` on one with many profiles.
    """
    from .datasets import synthetic_release

    rel = synthetic_release(3000, group_size=10, n_values=6, seed=1)
    audit(rel, k=4)
    is_safe(rel, c=0.9, k=3)
    max_safe_k(rel, c=0.9)
    audit(synthetic_release(1_200_000, group_size=200, n_values=20, seed=3), k=12)
