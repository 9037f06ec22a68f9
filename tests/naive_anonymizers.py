"""Slow reference implementations of SkylineAnonymize (Chen et al.) and ART (Wong et al.).

Standard library and ``fractions.Fraction`` only — no NumPy, no fastpriv — written from the
rules as stated (spec skyline.md §SkylineAnonymize, robustness.md §ART, and the rule text
in ``fastpriv/_kernels/art.py``), without the kernels' indexes: every candidate is
enumerated, every statistic recomputed from the group members.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from fractions import Fraction

INF = math.inf


# ============================================================================ SkylineAnonymize
def svpi_t(n, s, big_s, k):
    """T(g,ℓ,k) for SVPI (spec): max(0, n − s − S_ℓ − k) / s; +∞ when s = 0."""
    if s == 0:
        return INF
    return Fraction(max(0, n - s - big_s - k), s)


def svpi_v(n, s, m, k):
    """V(g,m,k) for SVPI: ∏_{i<m} (n − s − k − i)/(n − k − i), 0 from the first numerator ≤ 0,
    1 when s = 0 (C1) or m = 0."""
    if s == 0 or m == 0:
        return Fraction(1)
    out = Fraction(1)
    for i in range(m):
        num = n - s - k - i
        if num <= 0:
            return Fraction(0)
        out *= Fraction(num, n - k - i)
    return out


def _mul(a, b):
    if a == INF or b == INF:
        return INF
    return a * b


def svpi_terms(values, sigma, ell, k, m):
    """(minNR, T(ℓ,0), T(ℓ,k), V(m,0), V(m,k)) of one SVPI group (list of values), ℓ = ell."""
    cnt = Counter(values)
    n = len(values)
    s = cnt.get(sigma, 0)
    if s == 0:
        return [INF, INF, INF, Fraction(1), Fraction(1)]
    others = sorted((c for v, c in cnt.items() if v != sigma), reverse=True)
    big_s = sum(others[:ell])
    tk = svpi_t(n, s, big_s, k)
    return [_mul(tk, svpi_v(n, s, m, k + 1)), svpi_t(n, s, big_s, 0), tk,
            svpi_v(n, s, m, 0), svpi_v(n, s, m, k)]


def _min_nr(st):
    return min(st[0], _mul(st[1], st[4]), _mul(st[2], st[3]))


def _safe(st, c):
    nr = _min_nr(st)
    return nr == INF or nr > (1 - Fraction(c)) / Fraction(c)


def median_cut(values):
    """Weighted lower median (one weight per row); the value below when it is the maximum;
    None for a single distinct value."""
    distinct = sorted(set(values))
    if len(distinct) < 2:
        return None
    cnt = Counter(values)
    target = (len(values) + 1) // 2
    cum = 0
    i = 0
    for v in distinct:
        cum += cnt[v]
        if cum >= target:
            break
        i += 1
    if i == len(distinct) - 1:
        i -= 1
    return distinct[i]


def skyline_anonymize_reference(rows, qi, sensitive, pairs):
    """Figure 6 (typo fixed) for SVPI rows with integer QI, exact arithmetic.

    ``rows``: list of dicts; ``pairs``: list of (sigma, l, k, m, c). Splits: for each
    attribute with more than one value in the group, by decreasing normalized width
    (max − min) / (global max − global min), ties by attribute order, the median cut; a
    FIFO queue of groups. Returns the final groups (lists of row indices, in the order they
    become final), or None when the whole table is unsafe.
    """
    lo = {a: min(r[a] for r in rows) for a in qi}
    hi = {a: max(r[a] for r in rows) for a in qi}

    def terms(idx):
        vals = [rows[i][sensitive] for i in idx]
        return [svpi_terms(vals, sig, ell, k, m) for sig, ell, k, m, _ in pairs]

    stats = terms(range(len(rows)))
    if not all(_safe(st, p[4]) for st, p in zip(stats, pairs, strict=True)):
        return None
    queue = deque([list(range(len(rows)))])
    final = []
    while queue:
        g = queue.popleft()
        widths = []
        for j, a in enumerate(qi):
            vs = [rows[i][a] for i in g]
            if max(vs) == min(vs):
                continue
            span = hi[a] - lo[a]
            widths.append((-Fraction(max(vs) - min(vs), span) if span else 0, j))
        done = False
        for _, j in sorted(widths):
            a = qi[j]
            cut = median_cut([rows[i][a] for i in g])
            left = [i for i in g if rows[i][a] <= cut]
            right = [i for i in g if rows[i][a] > cut]
            tl, tr = terms(left), terms(right)
            merged = [[min(x, y, z) for x, y, z in zip(s0, s1, s2, strict=True)]
                      for s0, s1, s2 in zip(stats, tl, tr, strict=True)]
            if all(_safe(st, p[4]) for st, p in zip(merged, pairs, strict=True)):
                stats = merged
                queue.append(left)
                queue.append(right)
                done = True
                break
        if not done:
            final.append(g)
    return final


# ============================================================================ ART
def delta_ceil(N, r, f):
    """Δ_ceil in float, the kernel's arithmetic order."""
    if N == 1:
        return -(1.0 - f)
    num = (N - r) * f * (1.0 - f)
    den = (r - 1.0) * f + (N - 1) * (1.0 - f)
    return num / den


def required_size(d, r, f, n0, limit):
    """Smallest N ≥ n0 with d ≤ Δ_ceil(N, r, f), found by scanning; None when there is
    none up to ``limit`` (the number of rows)."""
    if f in (0.0, 1.0):
        return n0 if d == 0.0 and n0 <= limit else None
    if d >= f:
        return None
    N = n0
    while not d <= delta_ceil(N, r, f):
        N += 1
        if N > limit:
            return None
    return N if N <= limit else None


def art_reference(F, row_prof, row_cls, row_rank, r, pad=False, condition="delta"):
    """ART's merging rules (``fastpriv/_kernels/art.py`` module docstring), literally.

    ``F[p][a][x]`` probabilities per profile, ``row_prof``, ``row_cls`` (0 or 1 + index in
    X_s), ``row_rank`` per row. Returns ``(groups, unsatisfied)``: the groups as sorted
    lists of rows, and the set of X_s holders whose group fails the Δ condition.
    """
    n = len(row_prof)
    nA = len(F[0])
    nX = len(F[0][0])
    n0 = max(2, math.ceil(r))
    group = {i: [i] for i in range(n)}          # id -> members (id = a member)
    of = list(range(n))

    def f(i, a, x):
        return F[row_prof[i]][a][x]

    def bounds(g, a, x):
        vs = [f(i, a, x) for i in group[g]]
        return min(vs), max(vs)

    def ys(g):
        return {row_cls[i] - 1 for i in group[g] if row_cls[i] > 0}

    def req(g, x):
        best = n0
        for a in range(nA):
            mn, mx = bounds(g, a, x)
            q = required_size(mx - mn, r, mx, n0, n)
            if q is None:
                return None
            best = max(best, q)
        return best if best <= n else None

    def infeasible(mn, mx):
        if condition == "exact":
            return mx == 1.0
        return (mn == 0.0 and mx > 0.0) or (mx == 1.0 and mn < 1.0)

    def odds(v):
        return math.inf if v >= 1.0 else v / (1.0 - v)

    def status(g, x):
        """(ok, stuck) of group g for x."""
        if condition == "delta":
            q = req(g, x)
            return q is not None and len(group[g]) >= q, q is None
        ok = True
        for a in range(nA):
            os_ = [odds(f(i, a, x)) for i in group[g]]
            if max(os_) == math.inf:
                return False, True
            if not r * max(os_) <= math.fsum(os_) * (1.0 + 1e-12):
                ok = False
        return ok, False

    def dist(g, g2, x):
        dd = 0.0
        for a in range(nA):
            lo, hi = bounds(g, a, x)
            lo2, hi2 = bounds(g2, a, x)
            dd += (max(hi, hi2) - min(lo, lo2)) - (hi - lo)
        return dd

    def feasible(g, g2, x):
        for a in range(nA):
            lo, hi = bounds(g, a, x)
            lo2, hi2 = bounds(g2, a, x)
            if infeasible(min(lo, lo2), max(hi, hi2)):
                return False
        return True

    def merge(g, g2):
        keep, gone = (g, g2) if len(group[g]) >= len(group[g2]) else (g2, g)
        group[keep] = group[keep] + group[gone]
        for i in group[gone]:
            of[i] = keep
        del group[gone]
        return keep

    def key(g, g2, x, seed):
        d = dist(g, g2, x)
        if len(group[g2]) == 1:
            i = group[g2][0]
            rk = row_rank[i]
            side = 0 if rk >= seed else 1
            return (d, 0, row_prof[i], row_cls[i], abs(rk - seed), side,
                    i if side == 0 else -i)
        return (d, 1, min(group[g2]))

    holders = [[i for i in range(n) if row_cls[i] == x + 1] for x in range(nX)]
    # the kernel's single-row index holds rows never merged; padding chunks are final
    chunked = False
    run = 0
    while True:
        changed = True
        while changed:
            changed = False
            for x in range(nX):
                for h in holders[x]:
                    while True:
                        g = of[h]
                        ok, stuck = status(g, x)
                        if ok or stuck:
                            break
                        yg = ys(g)
                        cands = [g2 for g2 in group if g2 != g and not (ys(g2) & yg)
                                 and feasible(g, g2, x)]
                        if not cands:
                            break
                        best = min(cands, key=lambda g2: key(g, g2, x, row_rank[h]))
                        merge(g, best)
                        changed = True
        run += 1
        if not pad or run > 1 or chunked:
            break
        left = sorted((i for i in range(n) if row_cls[i] == 0 and len(group[of[i]]) == 1),
                      key=lambda i: (row_prof[i], row_rank[i], i))
        if not left:
            break
        k = len(left) // n0
        if k >= 1:
            for c in range(k):
                part = left[c * n0:(c + 1) * n0 if c < k - 1 else len(left)]
                g = part[0]
                for i in part[1:]:
                    g = merge(g, of[i])
            chunked = True
            break
        targets = [g for g in group if len(group[g]) > 1 and ys(g)]
        if not targets:
            g = left[0]
            for i in left[1:]:
                g = merge(g, of[i])
            break
        for i in left:
            targets = [g for g in group if len(group[g]) > 1 and ys(g)
                       and all(feasible(g, of[i], y) for y in ys(g))]
            if not targets:
                continue

            def pad_key(g2, i=i):
                dd = 0.0
                for y in range(nX):
                    if y in ys(g2):
                        for a in range(nA):
                            lo, hi = bounds(g2, a, y)
                            v = f(i, a, y)
                            dd += (max(hi, v) - min(lo, v)) - (hi - lo)
                return (dd, min(group[g2]))

            merge(min(targets, key=pad_key), of[i])
    unsat = set()
    for x in range(nX):
        for h in holders[x]:
            if not status(of[h], x)[0]:
                unsat.add(h)
    return sorted(sorted(m) for m in group.values()), unsat
