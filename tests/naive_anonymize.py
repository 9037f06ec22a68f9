"""Brute-force oracles for the anonymization engine (stdlib + fractions only).

Tables are lists of dicts (one per row). Hierarchies are dicts ``value -> [label at level
0, level 1, …]``. Everything is computed row by row, the slow obvious way.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction


# ---------------------------------------------------------------------- generalization
def generalize(rows, qi, hierarchies, node):
    """Generalized QI tuple of every row at ``node`` (one level per attribute)."""
    return [tuple(hierarchies[a][r[a]][lev] for a, lev in zip(qi, node, strict=True)) for r in rows]


def node_groups(rows, qi, sensitive, hierarchies, node):
    """Groups (lists of sensitive values) of the release at ``node``, keyed by tuple."""
    out = {}
    for key, r in zip(generalize(rows, qi, hierarchies, node), rows, strict=True):
        out.setdefault(key, []).append(r[sensitive])
    return out


def all_nodes(heights):
    """Every node of a lattice with the given numbers of levels."""
    return list(itertools.product(*[range(h) for h in heights]))


def minimal_nodes(heights, satisfies):
    """Exhaustive lattice search: nodes that satisfy with no satisfying node below."""
    sat = {n for n in all_nodes(heights) if satisfies(n)}
    out = []
    for n in sat:
        if not any(m != n and all(x <= y for x, y in zip(m, n, strict=True)) for m in sat):
            out.append(n)
    return sorted(out, key=lambda n: (sum(n), n))


# ---------------------------------------------------------------------- criteria
def group_passes(values, criterion, q=None, order=None):
    """Does one group (list of sensitive values) pass a criterion?

    ``criterion`` is a tuple: ("k", k), ("distinct", l), ("entropy", l), ("recursive", c, l),
    ("t", t) (equal distance, q = table distribution {value: Fraction}), ("t_ordered", t)
    (values sorted, or ``order``), ("ck_neg", c, k), ("alpha", alpha).
    """
    cnt = Counter(values)
    n = len(values)
    tops = sorted(cnt.values(), reverse=True)
    kind = criterion[0]
    if kind == "k":
        return n >= criterion[1]
    if kind == "distinct":
        return len(cnt) >= criterion[1]
    if kind == "entropy":
        h = -sum((c / n) * math.log(c / n) for c in cnt.values())
        return h >= math.log(criterion[1]) - 1e-9
    if kind == "recursive":
        c, l = Fraction(criterion[1]), criterion[2]
        if len(tops) < l:
            return False
        return tops[0] < c * sum(tops[l - 1:])
    if kind in ("t", "t_ordered"):
        domain = sorted(q) if order is None else list(order)
        p = {v: Fraction(cnt.get(v, 0), n) for v in domain}
        if kind == "t":
            emd = sum(abs(p[v] - q[v]) for v in domain) / 2
        else:
            m = len(domain)
            run, acc = Fraction(0), Fraction(0)
            for v in domain:
                run += p[v] - q[v]
                acc += abs(run)
            emd = acc / (m - 1) if m > 1 else Fraction(0)
        return emd <= Fraction(criterion[1]) + Fraction(1, 10**9)
    if kind == "ck_neg":
        c, k = Fraction(criterion[1]), criterion[2]
        den = n - sum(tops[1:1 + k])
        return Fraction(tops[0], den) < c
    if kind == "alpha":
        return Fraction(tops[0], n) <= Fraction(criterion[1])
    raise ValueError(kind)


def table_distribution(rows, sensitive):
    """Q: the whole table's distribution of the sensitive attribute (Fractions)."""
    cnt = Counter(r[sensitive] for r in rows)
    n = len(rows)
    return {v: Fraction(c, n) for v, c in cnt.items()}


def release_passes(groups, criteria, q=None):
    """Every group passes every criterion (``groups``: iterable of value lists)."""
    return all(group_passes(g, c, q) for g in groups for c in criteria)


def ck_negations_disclosure(groups, k):
    """Martin negated-atom max disclosure: max_b n_b(s^0) / (n_b − Σ_{j=1..k} n_b(s^j))."""
    best = Fraction(0)
    for g in groups:
        tops = sorted(Counter(g).values(), reverse=True)
        best = max(best, Fraction(tops[0], len(g) - sum(tops[1:1 + k])))
    return best


# ---------------------------------------------------------------------- Mondrian
def median_cut(values):
    """The split rule: weighted lower median value (or the one below the maximum).

    Returns ``None`` when the values are all equal.
    """
    distinct = sorted(set(values))
    if len(distinct) < 2:
        return None
    cnt = Counter(values)
    target = (len(values) + 1) // 2
    cum = 0
    for i, v in enumerate(distinct):
        cum += cnt[v]
        if cum >= target:
            break
    if i == len(distinct) - 1:
        i -= 1
    return distinct[i]


def split(rows, attr, key=lambda v: v):
    """The two halves of a partition at the median cut of ``attr`` (or ``None``)."""
    vals = [key(r[attr]) for r in rows]
    cut = median_cut(vals)
    if cut is None:
        return None
    left = [r for r in rows if key(r[attr]) <= cut]
    right = [r for r in rows if key(r[attr]) > cut]
    return left, right


# ---------------------------------------------------------------------- count queries
def count_actual(rows, query, sensitive):
    """COUNT(*) of rows satisfying every predicate set in ``query`` (attr -> set)."""
    return sum(1 for r in rows if all(r[a] in s for a, s in query.items()))


def estimate_bucketized(rows, group_of_row, query, qi, sensitive):
    """Σ_g |{t ∈ g : t satisfies the QI predicates}| · #{v ∈ X_g : v ∈ b_S} / n_g."""
    groups = {}
    for r, g in zip(rows, group_of_row, strict=True):
        if g is None or g < 0:
            continue
        groups.setdefault(g, []).append(r)
    est = Fraction(0)
    b_s = query[sensitive]
    for g, members in groups.items():
        hit = sum(1 for r in members if all(r[a] in query[a] for a in qi if a in query))
        sv = sum(1 for r in members if r[sensitive] in b_s)
        est += Fraction(hit * sv, len(members))
    return est


def estimate_generalized(rows, gen_sets, query, qi, sensitive):
    """Σ_t [t.S ∈ b_S] · ∏_A |gen(t.A) ∩ b_A| / |gen(t.A)| (``gen_sets[i][A]`` = set, or
    ``None`` for a suppressed row)."""
    est = Fraction(0)
    for r, gs in zip(rows, gen_sets, strict=True):
        if gs is None or r[sensitive] not in query[sensitive]:
            continue
        f = Fraction(1)
        for a in qi:
            if a in query:
                f *= Fraction(len(gs[a] & query[a]), len(gs[a]))
        est += f
    return est


def average_delta(f_rows, group_of_row):
    """Mean over (group, value) of max − min of f inside the group (f_rows: lists)."""
    groups = {}
    for fr, g in zip(f_rows, group_of_row, strict=True):
        if g is None or g < 0:
            continue
        groups.setdefault(g, []).append(fr)
    spreads = []
    for g, fs in groups.items():
        for v in range(len(fs[0])):
            col = [x[v] for x in fs]
            spreads.append(max(col) - min(col))
    return sum(spreads) / len(spreads)


# ---------------------------------------------------------------------- lattice utility
def suppressed_groups(groups, passes):
    """Split groups (lists of values) into (kept, suppressed) by a per-group test."""
    kept = [g for g in groups if passes(g)]
    return kept, [g for g in groups if not passes(g)]


def discernibility(groups, passes, n_rows):
    """Σ_{kept g} n_g² + (suppressed individuals)·n — failing groups suppressed."""
    kept, bad = suppressed_groups(groups, passes)
    return sum(len(g) ** 2 for g in kept) + sum(len(g) for g in bad) * n_rows


def best_node(nodes, loss):
    """The node minimizing (loss, height, lexicographic), or None."""
    nodes = list(nodes)
    if not nodes:
        return None
    return min(nodes, key=lambda n: (loss(n), sum(n), n))
