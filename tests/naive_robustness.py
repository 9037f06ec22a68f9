"""Brute-force oracles for r-robustness (Wong et al.; spec robustness.md).

Standard library and ``fractions.Fraction`` only — no NumPy, no fastpriv — so they share
no code (and no bug) with the kernels. Everything enumerates possible worlds literally.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction


def _frac(x):
    return x if isinstance(x, Fraction) else Fraction(x)


def binary_worlds(f, n):
    """Yield ``(positions of x, weight)`` for every placement of n x's among len(f) tuples."""
    f = [_frac(v) for v in f]
    N = len(f)
    for pos in itertools.combinations(range(N), n):
        s = set(pos)
        w = Fraction(1)
        for i in range(N):
            w *= f[i] if i in s else 1 - f[i]
        yield s, w


def binary_posterior(f, n):
    """``(posteriors, sum_weights)`` by enumeration; posteriors ``None`` when Σ w = 0."""
    N = len(f)
    acc = [Fraction(0)] * N
    total = Fraction(0)
    for s, w in binary_worlds(f, n):
        total += w
        for i in s:
            acc[i] += w
    if total == 0:
        return None, total
    return [a / total for a in acc], total


def distinct_permutations(values):
    """Every distinct arrangement of the multiset ``values`` (each exactly once).

    Recursive over the remaining counts, so it yields N!/Π m_k! arrangements without
    generating the N! permutations.
    """
    counts = Counter(values)
    keys = sorted(counts, key=str)
    n = len(values)
    prefix = []

    def rec():
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for k in keys:
            if counts[k]:
                counts[k] -= 1
                prefix.append(k)
                yield from rec()
                prefix.pop()
                counts[k] += 1

    yield from rec()


def multivalued_posterior(P, values):
    """``({value: [p(t_j : value)]}, sum_weights)``; posteriors ``None`` when Σ w = 0.

    ``P`` is a list of dicts value -> probability (missing = 0), ``values`` the multiset.
    """
    P = [{k: _frac(v) for k, v in row.items()} for row in P]
    N = len(P)
    distinct = sorted(set(values), key=str)
    acc = {x: [Fraction(0)] * N for x in distinct}
    total = Fraction(0)
    for perm in distinct_permutations(list(values)):
        w = Fraction(1)
        for j, x in enumerate(perm):
            w *= P[j].get(x, Fraction(0))
        if w == 0:
            continue
        total += w
        for j, x in enumerate(perm):
            acc[x][j] += w
    if total == 0:
        return None, total
    return {x: [a / total for a in acc[x]] for x in distinct}, total


def delta_ceil_paper(N, r, f):
    """The paper's printed form (pole at f = 1): (N-r) f / (f (r-1)/(1-f) + N - 1)."""
    N, r, f = _frac(N), _frac(r), _frac(f)
    return (N - r) * f / (f * (r - 1) / (1 - f) + N - 1)


def min_group_size(delta, r, f, n_max=10_000):
    """Smallest N with delta <= Δ_ceil(N, r, f) by scanning N (None if none up to n_max)."""
    delta, r, f = _frac(delta), _frac(r), _frac(f)
    for N in range(1, n_max + 1):
        den = (r - 1) * f + (N - 1) * (1 - f)
        if den == 0:
            continue
        if delta <= (N - r) * f * (1 - f) / den and N >= r:
            return N
    return None


def derived_knowledge(rows, qi, sensitive, min_support):
    """True conditional frequencies for every non-empty subset of ``qi``.

    ``rows`` is a list of dicts. Returns ``({attribute_set: {signature: {value: p}}},
    global_rates)`` keeping only signatures with at least ``min_support`` rows.
    """
    n = len(rows)
    glob = Counter(r[sensitive] for r in rows)
    rates = {v: Fraction(c, n) for v, c in glob.items()}
    out = {}
    for size in range(1, len(qi) + 1):
        for A in itertools.combinations(qi, size):
            sig_count = Counter(tuple(r[a] for a in A) for r in rows)
            joint = Counter((tuple(r[a] for a in A), r[sensitive]) for r in rows)
            dist = {}
            for s, c in sig_count.items():
                if c >= min_support:
                    dist[s] = {v: Fraction(joint.get((s, v), 0), c) for v in glob}
            if dist:
                out[A] = dist
    return out, rates


def audit(rows, qi_sets, group, r, knowledge, fallback, sensitive_values=None,
          model="binary"):
    """Brute-force r-robustness audit of a tiny released table.

    ``rows``: list of dicts with the QI columns, ``group`` and the true value under key
    ``"_value"``. ``knowledge``: {attribute_set: {signature: {value: p}}}; signatures not
    listed use ``fallback`` {value: p}. Returns ``(max posterior, [(row, A, x, p) with p >
    1/r], undefined list)`` with exact Fractions.
    """
    groups = {}
    for i, r_ in enumerate(rows):
        groups.setdefault(r_[group], []).append(i)
    thr = Fraction(1) / r
    best = Fraction(0)
    problematic = []
    undefined = []
    all_values = sorted({r_["_value"] for r_ in rows}, key=str)
    xs = all_values if sensitive_values is None else list(sensitive_values)
    for g, members in groups.items():
        multiset = [rows[i]["_value"] for i in members]
        counts = Counter(multiset)
        for A in qi_sets:
            def dist(i, A=A):
                s = tuple(rows[i][a] for a in A)
                return knowledge.get(A, {}).get(s, fallback)
            if model == "binary":
                for x in xs:
                    n = counts.get(x, 0)
                    f = [dist(i).get(x, Fraction(0)) for i in members]
                    post, tot = binary_posterior(f, n)
                    if post is None:
                        undefined.append((g, A, x))
                        continue
                    for i, p in zip(members, post, strict=True):
                        best = max(best, p)
                        if p > thr:
                            problematic.append((i, A, x, p))
            else:
                P = [dist(i) for i in members]
                post, tot = multivalued_posterior(P, multiset)
                if post is None:
                    undefined.append((g, A, None))
                    continue
                for x in xs:
                    if x not in post:
                        continue
                    for i, p in zip(members, post[x], strict=True):
                        best = max(best, p)
                        if p > thr:
                            problematic.append((i, A, x, p))
    return best, problematic, undefined


def fsum_exact(xs):
    """Exact sum of floats via Fractions (for Σ p_j = n checks)."""
    return sum((Fraction(x) for x in xs), Fraction(0))


def log_binom(n, k):
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
