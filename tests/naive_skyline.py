"""Brute-force oracles for the privacy skyline (Chen et al., VLDB 2007).

Standard library and ``fractions.Fraction`` only — no NumPy, no fastpriv — so they share no
code (and no bug) with the kernels. Releases are ``[(n_g, {value: count}), ...]`` plus a
case, ``"svpi"``, ``"mvpi-set"`` or ``"mvpi-multiset"``.

Sample spaces (SPEC.md §1):

* SVPI: a reconstruction of a group is a bijection of its multiset onto its individuals;
  every distinct arrangement is equally likely (each comes from the same number of
  bijections).
* MVPI-Set: for every value x independently, a uniformly random #x-subset of the group
  holds x.
* MVPI-Multiset: every *occurrence* independently goes to a uniformly chosen individual —
  all n^{#x} labelled assignments equally likely (NOT every distinct dataset).

Groups are independent. Knowledge (each dimension "at most"): ℓ facts about t (SVPI
x ∉ t; MVPI x ∈ t → σ ∈ t), k about others u (SVPI y ∈ u; MVPI σ ∉ u), m family members
v (σ ∈ v → σ ∈ t); t, the u's and the v's are distinct. BP is the maximum of
Pr(σ ∈ t | K) over all groundings with Pr(K) > 0.

Two evaluators:

* :func:`joint_probability` enumerates the product of every group's reconstructions and
  evaluates the knowledge formula literally (implications included). Exponential; for the
  smallest releases and the paper's examples.
* :func:`grounding_probability` splits on σ ∈ t / σ ∉ t (under each branch every
  implication is a literal or true) and uses group independence — still enumerating each
  group's reconstructions. :func:`breach_grid` maximises it over all groundings up to the
  exchangeability of the individuals within a group (which individual of a group plays a
  role does not matter).
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from functools import lru_cache
from itertools import combinations, combinations_with_replacement, product

SVPI = "svpi"
SET = "mvpi-set"
MULTISET = "mvpi-multiset"
INF = math.inf


def normalize(release):
    """``[(n, {value: count>0})]`` as a hashable tuple of (n, sorted items)."""
    out = []
    for n, X in release:
        items = tuple(sorted((v, c) for v, c in X.items() if c))
        out.append((n, items))
    return tuple(out)


# ----------------------------------------------------------------- reconstructions
def _arrangements(values):
    """Distinct orderings of a multiset (list of labels)."""
    if not values:
        yield ()
        return
    for v in sorted(set(values)):
        rest = list(values)
        rest.remove(v)
        for tail in _arrangements(rest):
            yield (v,) + tail


@lru_cache(maxsize=None)
def svpi_worlds(group):
    """All reconstructions of an SVPI group: tuples value-per-individual, each weight 1."""
    n, items = group
    values = [v for v, c in items for _ in range(c)]
    assert len(values) == n, "SVPI: one value per individual"
    return tuple(_arrangements(values))


@lru_cache(maxsize=None)
def holder_distribution(case, n, count):
    """For one value with ``count`` occurrences in a group of ``n``: ``{holder mask: weight}``."""
    dist = Counter()
    if case == SET:
        assert count <= n
        for subset in combinations(range(n), count):
            mask = 0
            for i in subset:
                mask |= 1 << i
            dist[mask] += 1
    else:
        for assignment in product(range(n), repeat=count):
            mask = 0
            for i in assignment:
                mask |= 1 << i
            dist[mask] += 1
    return tuple(sorted(dist.items()))


@lru_cache(maxsize=None)
def mvpi_worlds(case, group):
    """All reconstructions of an MVPI group: ``(weight, {value: holder mask})``."""
    n, items = group
    per_value = [[(v, mask, w) for mask, w in holder_distribution(case, n, c)] for v, c in items]
    out = []
    for combo in product(*per_value):
        weight = 1
        masks = {}
        for v, mask, w in combo:
            weight *= w
            masks[v] = mask
        out.append((weight, masks))
    return tuple(out)


def _holds(case, world, value, i):
    if case == SVPI:
        return world[i] == value
    return bool(world.get(value, 0) >> i & 1)


def _group_worlds(case, group):
    if case == SVPI:
        return [(1, w) for w in svpi_worlds(group)]
    return list(mvpi_worlds(case, group))


def world_count(release, case):
    """Number of (weighted) joint reconstructions :func:`joint_probability` enumerates."""
    total = 1
    for grp in normalize(release):
        if case == SVPI:
            n, items = grp
            size = math.factorial(n)
            for _, c in items:
                size //= math.factorial(c)
        else:
            size = 1
            for _, c in grp[1]:
                size *= len(holder_distribution(case, grp[0], c))
        total *= size
    return total


# ----------------------------------------------------------------- joint evaluation
def joint_probability(release, case, sigma, t, x=(), u=(), v=()):
    """Pr(σ ∈ t | K) by enumerating every reconstruction of the whole release.

    Individuals are ``(group, index)``; ``x`` values; ``u``: SVPI ``((g, i), y)`` pairs,
    MVPI ``(g, i)``; ``v``: ``(g, i)``. Returns a Fraction, or None when Pr(K) = 0.
    """
    rel = normalize(release)
    worlds = [_group_worlds(case, g) for g in rel]
    num = den = 0
    for combo in product(*worlds):
        weight = 1
        for w, _ in combo:
            weight *= w
        world = [wd for _, wd in combo]

        def has(ind, value, world=world):
            g, i = ind
            return _holds(case, world[g], value, i)

        s_t = has(t, sigma)
        if case == SVPI:
            k_t = all(not has(t, xv) for xv in x)
            k_u = all(has(ui, y) for ui, y in u)
        else:
            k_t = all((not has(t, xv)) or s_t for xv in x)
            k_u = all(not has(ui, sigma) for ui in u)
        k_v = all((not has(vi, sigma)) or s_t for vi in v)
        if k_t and k_u and k_v:
            den += weight
            if s_t:
                num += weight
    if den == 0:
        return None
    return Fraction(num, den)


# ----------------------------------------------------------------- factorized evaluation
@lru_cache(maxsize=None)
def _literal_probability(case, group, literals):
    """Pr(∧ literals) within one group; literals are (value, individual, holds).

    SVPI: enumerate the group's reconstructions. MVPI: the values are independent by
    definition of the sample space, so the probability is the product over values of the
    probability of that value's literals under its holder distribution (enumerated).
    """
    if case == SVPI:
        total = good = 0
        for weight, world in _group_worlds(case, group):
            total += weight
            if all(_holds(case, world, val, i) == want for val, i, want in literals):
                good += weight
        return Fraction(good, total)
    n, items = group
    counts = dict(items)
    out = Fraction(1)
    for val in sorted({v for v, _, _ in literals}, key=repr):
        lits = [(i, want) for v, i, want in literals if v == val]
        dist = holder_distribution(case, n, counts[val]) if val in counts else ((0, 1),)
        total = good = 0
        for mask, weight in dist:
            total += weight
            if all(bool(mask >> i & 1) == want for i, want in lits):
                good += weight
        out *= Fraction(good, total)
    return out


def _branch_literals(case, sigma, is_t, xs, us, n_v, branch_in):
    """Literals of one group under σ∈t (branch_in) or σ∉t; individuals numbered t, u's, v's."""
    lits = []
    nxt = 0
    if is_t:
        lits.append((sigma, 0, branch_in))
        if case == SVPI or not branch_in:
            lits.extend((xv, 0, False) for xv in xs)
        nxt = 1
    for y in us:
        if case == SVPI:
            lits.append((y, nxt, True))
        else:
            lits.append((sigma, nxt, False))
        nxt += 1
    for _ in range(n_v):
        if not branch_in:
            lits.append((sigma, nxt, False))
        nxt += 1
    return tuple(sorted(lits, key=repr))


def grounding_probability(release, case, sigma, t_group, xs, config):
    """Pr(σ ∈ t | K) for a grounding given per group: ``config[g] = (us, n_v)``.

    ``us`` is a tuple of y values (SVPI) or of None (MVPI, one per u). Returns a Fraction,
    or None when Pr(K) = 0.
    """
    rel = normalize(release)
    a = b = Fraction(1)
    for g, grp in enumerate(rel):
        us, n_v = config[g]
        is_t = g == t_group
        if not is_t and not us and not n_v:
            continue
        a *= _literal_probability(case, grp, _branch_literals(case, sigma, is_t, xs, us, n_v,
                                                              True))
        b *= _literal_probability(case, grp, _branch_literals(case, sigma, is_t, xs, us, n_v,
                                                              False))
    if a + b == 0:
        return None
    return a / (a + b)


def _u_options(case, group, max_u):
    present = sorted(v for v, _ in group[1])
    for size in range(max_u + 1):
        if case == SVPI:
            for ys in combinations_with_replacement(present, size):
                yield ys
        else:
            yield (None,) * size


def groundings(release, case, sigma, lmax, kmax, mmax):
    """Every grounding up to exchangeability: ``(t_group, xs, config)``."""
    rel = normalize(release)
    G = len(rel)

    def configs(g, t_group, k_left, m_left):
        if g == G:
            yield ()
            return
        n = rel[g][0]
        cap = n - (1 if g == t_group else 0)
        for us in _u_options(case, rel[g], min(k_left, cap)):
            for n_v in range(min(m_left, cap - len(us)) + 1):
                for rest in configs(g + 1, t_group, k_left - len(us), m_left - n_v):
                    yield ((us, n_v),) + rest

    for t_group in range(G):
        if rel[t_group][0] < 1:
            continue
        pool = sorted(v for v, _ in rel[t_group][1] if v != sigma)
        for r in range(min(lmax, len(pool)) + 1):
            for xs in combinations(pool, r):
                for config in configs(0, t_group, kmax, mmax):
                    yield t_group, xs, config


def breach_grid(release, case, sigma, lmax, kmax, mmax):
    """BP_σ(ℓ,k,m) for every ℓ ≤ lmax, k ≤ kmax, m ≤ mmax (at-most semantics), as Fractions."""
    best = {}
    for t_group, xs, config in groundings(release, case, sigma, lmax, kmax, mmax):
        p = grounding_probability(release, case, sigma, t_group, xs, config)
        if p is None:
            continue
        key = (len(xs), sum(len(us) for us, _ in config), sum(nv for _, nv in config))
        if p > best.get(key, -1):
            best[key] = p
    grid = {}
    for l in range(lmax + 1):
        for k in range(kmax + 1):
            for m in range(mmax + 1):
                vals = [p for (a, b, c), p in best.items() if a <= l and b <= k and c <= m]
                grid[(l, k, m)] = max(vals) if vals else Fraction(0)
    return grid


def breach_probability(release, case, sigma, l, k, m):
    """BP_σ(ℓ, k, m) by brute force."""
    return breach_grid(release, case, sigma, l, k, m)[(l, k, m)]


# ----------------------------------------------------------------- per-group quantities
def _group_ratio(case, group, sigma, xs, us, n_v, with_t):
    """(numerator, denominator) of the negated ratio restricted to one group, or None."""
    if with_t:
        num = _literal_probability(case, group, _branch_literals(case, sigma, True, xs, us, n_v,
                                                                 False))
        den = _literal_probability(case, group, _branch_literals(case, sigma, True, xs, us, n_v,
                                                                 True))
        return num, den
    base = _literal_probability(case, group, _branch_literals(case, sigma, False, (), us, 0,
                                                              True))
    num = _literal_probability(case, group, _branch_literals(case, sigma, False, (), us, n_v,
                                                             False))
    return num, base


def _ratio(num, den):
    if den == 0:
        return None if num == 0 else INF
    return num / den


def group_t(release, case, sigma, g, l, k):
    """T(g,ℓ,k) = min over x's, u's in g of Pr(σ∉t ∧ x∉t | K_u) / Pr(σ∈t | K_u)."""
    grp = normalize(release)[g]
    if not any(v == sigma for v, _ in grp[1]):
        return INF
    pool = sorted(v for v, _ in grp[1] if v != sigma)
    best = INF
    for r in range(min(l, len(pool)) + 1):
        for xs in combinations(pool, r):
            for us in _u_options(case, grp, min(k, grp[0] - 1)):
                val = _ratio(*_group_ratio(case, grp, sigma, xs, us, 0, True))
                if val is not None and val < best:
                    best = val
    return best


def group_v(release, case, sigma, g, m, k):
    """V(g,m,k) = min over u's, v's in g of Pr(∧ σ∉v | K_u)."""
    grp = normalize(release)[g]
    if not any(v == sigma for v, _ in grp[1]):
        return Fraction(1)
    best = Fraction(1)
    for us in _u_options(case, grp, min(k, grp[0])):
        for n_v in range(min(m, grp[0] - len(us)) + 1):
            val = _ratio(*_group_ratio(case, grp, sigma, (), us, n_v, False))
            if val is not None and val < best:
                best = val
    return best


def group_min_nr(release, case, sigma, g, l, k, m):
    """minNR(g,ℓ,k,m): t, the u's and the v's all in group g."""
    grp = normalize(release)[g]
    if not any(v == sigma for v, _ in grp[1]):
        return INF
    pool = sorted(v for v, _ in grp[1] if v != sigma)
    best = INF
    for r in range(min(l, len(pool)) + 1):
        for xs in combinations(pool, r):
            for us in _u_options(case, grp, min(k, grp[0] - 1)):
                for n_v in range(min(m, grp[0] - 1 - len(us)) + 1):
                    val = _ratio(*_group_ratio(case, grp, sigma, xs, us, n_v, True))
                    if val is not None and val < best:
                        best = val
    return best


def _mul(a, b):
    if a == INF or b == INF:
        return INF
    return a * b


def theorem2(release, case, sigma, l, k, m):
    """(minNR, [SS1..SS5]) from the brute-force per-group quantities."""
    G = len(normalize(release))
    ss1 = min([group_min_nr(release, case, sigma, g, l, k, m) for g in range(G)])
    ss2 = min([group_t(release, case, sigma, g, l, 0) for g in range(G)])
    ss3 = min([group_t(release, case, sigma, g, l, k) for g in range(G)])
    ss4 = min([group_v(release, case, sigma, g, m, 0) for g in range(G)])
    ss5 = min([group_v(release, case, sigma, g, m, k) for g in range(G)])
    return min(ss1, _mul(ss2, ss5), _mul(ss3, ss4)), [ss1, ss2, ss3, ss4, ss5]


def dp_min_nr(release, case, sigma, l, k, m):
    """Appendix A6 dynamic program over the brute-force per-group T and V."""
    G = len(normalize(release))
    with_ = [[INF] * (m + 1) for _ in range(k + 1)]
    without = [[INF] * (m + 1) for _ in range(k + 1)]
    without[0][0] = Fraction(1)
    for f in range(G):
        tt = [group_t(release, case, sigma, f, l, kk) for kk in range(k + 1)]
        vt = [[group_v(release, case, sigma, f, mm, kk) for kk in range(k + 2)]
              for mm in range(m + 1)]
        nw = [[INF] * (m + 1) for _ in range(k + 1)]
        nwo = [[INF] * (m + 1) for _ in range(k + 1)]
        for K in range(k + 1):
            for M in range(m + 1):
                for i in range(K + 1):
                    for j in range(M + 1):
                        vv = vt[M - j][K - i]
                        nwo[K][M] = min(nwo[K][M], _mul(without[i][j], vv))
                        nw[K][M] = min(nw[K][M], _mul(with_[i][j], vv),
                                       _mul(_mul(without[i][j], tt[K - i]),
                                            vt[M - j][K - i + 1]))
        with_, without = nw, nwo
    return with_[k][m]


def bp_from_min_nr(min_nr):
    return Fraction(0) if min_nr == INF else 1 / (1 + min_nr)


# ----------------------------------------------------------------- knowledge skyline
def knowledge_skyline_a7(bp, c, l_cap, k_cap, m_cap):
    """Corrected Appendix A7 with a linear (not binary) search for k, literally.

    ``bp(l, k, m)`` returns BP; points at a cap are reported with math.inf there.
    """
    pts = []
    for l in range(l_cap + 1):
        if bp(l, 0, 0) >= c:
            break
        for m in range(m_cap + 1):
            if bp(l, 0, m) >= c:
                break
            k = 0
            while k < k_cap and bp(l, k + 1, m) < c:
                k += 1
            pts.append((l, k, m))
    keep = {p for p in pts
            if not any(q != p and all(a >= b for a, b in zip(q, p, strict=True)) for q in pts)}
    caps = (l_cap, k_cap, m_cap)
    return sorted(tuple(INF if x >= cap else x for x, cap in zip(p, caps, strict=True))
                  for p in keep)
