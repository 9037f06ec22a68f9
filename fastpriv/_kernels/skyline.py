"""Numba kernels of the privacy skyline (Chen, LeFevre, Ramakrishnan, VLDB 2007).

Everything here works on the CSR frequency profile of a :class:`~fastpriv.Release`
(``indptr`` int64, ``codes`` int32, ``counts`` int64, counts descending within a group) and
``sizes`` (n_g, int64). The public API is :mod:`fastpriv.skyline`; the formulas are those of
``spec/skyline.md``.

Notation, for a group g and the target value σ: ``n`` = n_g, ``s`` = #σ_g,
``S`` = S_ℓ = sum of the ℓ largest counts of values other than σ (zero-padded),
``pl`` = P_ℓ = ∏_{i=1..ℓ} (n − #s(i)) / n (the MVPI-Set factor).

=====  ====================================================================================
SVPI   T(ℓ,k) = max(0, n − s − S − k) / s
SET    T(ℓ,k) = max(0, n − s − k) / s · P_ℓ
MS     T(ℓ,k) = ((n−1)/n)^S · q^s / (1 − q^s),  q = (n−k−1)/(n−k);  0 if k ≥ n − 1
SVPI,  V(m,k) = ∏_{i=0..m−1} (n − s − k − i) / (n − k − i)   (0 from the first numerator ≤ 0)
SET
MS     V(m,k) = ((n − k − m)/(n − k))^s  (m ≥ 1, n−k−m > 0);  0 (m ≥ 1, n−k−m ≤ 0);  1 (m = 0)
all    minNR(ℓ,k,m) = T(ℓ,k) · V(m,k+1)
=====  ====================================================================================

Conventions (C1–C6 of the spec): a σ-free group has T = minNR = +∞ and V = 1, so it never
changes a minimum — kernels skip it; products stop at the first non-positive numerator;
``mul`` implements +∞ · 0 = +∞. The multiset case is evaluated in log space with
``log1p``/``expm1``; V of SVPI/Set switches to a ``log1p`` sum for long products.

Values are float64 in linear space. ``mul`` keeps a product of two strictly positive numbers
strictly positive (an underflow is clamped to :data:`TINY`), and the V and T helpers do the
same, so "minNR > 0" — i.e. BP < 1, the question asked at c = 1 — is answered exactly even
where a long product underflows.

Integer arguments of the helpers are always int64 and floats float64 (call sites cast), so
every kernel compiles one specialization.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .._threads import chunk_bounds, run_chunks

SVPI = 0
SET = 1
MULTISET = 2

INF = np.inf
#: smallest positive float64: stands in for a strictly positive product that underflowed.
TINY = 5e-324
#: V products longer than this are summed in log space.
LONG_PRODUCT = 64

# Memo of the V values per point, keyed by (n, s): slots per point (power of two).
_MEMO_SLOTS = 64
# check_sigma evaluates this many points or more group-major (:func:`points_stats`).
GROUP_MAJOR_POINTS = 8
# Class table of :func:`sigma_records` (a power of two; run once per (σ, ℓ)).
_RECORD_SLOTS = 1024
# Dominators kept by :func:`sigma_records` across classes (SVPI): the list is searched
# linearly, a hit moves half-way to the front, a full list overwrites its last entry.
_FRONT_SLOTS = 256


#: integers up to 2**53 are exact in float64
EXACT_INT = 9007199254740992.0


# ---------------------------------------------------------------------------- scalars
@kernel(helper=True)
def int_pow(base, e):
    """Return float(base ** e) for integers base >= 1, e >= 0, exact up to 2**53.

    A larger value is returned as some number > 2**53 (the loop stops there), so callers
    test exactness cheaply.
    """
    if base == 1:
        return 1.0
    r = 1.0
    for _ in range(e):
        r *= base
        if r > EXACT_INT:
            return r * 2.0
    return r


@kernel
def mul(a, b):
    """a·b with +∞·0 = +∞ (C4) and a positive product never rounded to 0."""
    if a == INF or b == INF:
        return INF
    r = a * b
    if r == 0.0 and a > 0.0 and b > 0.0:
        return TINY
    return r


@kernel
def v_value(n, s, m, k, case):
    """V(g, m, k) of a group with n individuals and s occurrences of σ (C1: s = 0 → 1)."""
    if s <= 0 or m <= 0:
        return 1.0
    big_n = n - k
    if case == MULTISET:
        if big_n - m <= 0:
            return 0.0
        den = int_pow(big_n, s)
        if den <= EXACT_INT:
            return int_pow(big_n - m, s) / den
        r = math.exp(s * math.log1p(-m / big_n))
        return r if r > 0.0 else TINY
    top = big_n - s
    # C2: the numerators top, top-1, ... reach <= 0 within m factors -> V = 0
    if top - (m - 1) <= 0:
        return 0.0
    # exact integer products while they fit in 53 bits: one correctly rounded division
    num = 1.0
    den = 1.0
    for i in range(m):
        den *= big_n - i
        if den > EXACT_INT:
            break
        num *= top - i
    if den <= EXACT_INT:
        return num / den
    if m <= LONG_PRODUCT:
        r = 1.0
        for i in range(m):
            r *= (top - i) / (big_n - i)
        if r > 0.0:
            return r
    lg = 0.0
    for i in range(m):
        lg += math.log1p(-s / (big_n - i))
    r = math.exp(lg)
    return r if r > 0.0 else TINY


@kernel
def t_value(n, s, S, k, case, pl):
    """T(g, ℓ, k); ``S`` = S_ℓ (SVPI, multiset), ``pl`` = P_ℓ (Set). ``s`` >= 1."""
    if case == SVPI:
        num = n - s - S - k
        if num <= 0:
            return 0.0
        return num / s
    if case == SET:
        num = n - s - k
        if num <= 0:
            return 0.0
        return mul(num / s, pl)
    # multiset (C3: T = 0 when k >= n - 1)
    if k >= n - 1:
        return 0.0
    big_n = n - k
    den = int_pow(n, S) * int_pow(big_n, s)
    if den <= EXACT_INT:
        # all integers exact: ((n-1)^S (N-1)^s) / (n^S (N^s - (N-1)^s))
        qs = int_pow(big_n - 1, s)
        return (int_pow(n - 1, S) * qs) / (int_pow(n, S) * (int_pow(big_n, s) - qs))
    a = s * math.log1p(-1.0 / (n - k))           # log q^s  (< 0)
    lt = S * math.log1p(-1.0 / n) + a - math.log(-math.expm1(a))
    r = math.exp(lt)
    return r if r > 0.0 else TINY


@kernel(helper=True)
def find_rank(codes, a, b, sig):
    """Position of code ``sig`` in the group slice [a, b) relative to ``a``; -1 if absent."""
    for e in range(a, b):
        if codes[e] == sig:
            return e - a
    return -1


@kernel(helper=True)
def top_sum(counts, a, d, r, l):
    """S_ℓ: sum of the ``l`` largest counts of the slice [a, a+d) skipping position ``r``."""
    lim = l if l < d - 1 else d - 1
    if r < 0:
        lim = l if l < d else d
    total = 0
    taken = 0
    e = 0
    while taken < lim:
        if e != r:
            total += counts[a + e]
            taken += 1
        e += 1
    return total


@kernel(helper=True)
def top_prod(counts, a, d, r, l, n):
    """P_ℓ = ∏ (n − c)/n over the ``l`` largest counts skipping position ``r`` (Set case)."""
    lim = l if l < d - 1 else d - 1
    p = 1.0
    taken = 0
    e = 0
    while taken < lim:
        if e != r:
            p = mul(p, (n - counts[a + e]) / n)
            taken += 1
        e += 1
    return p


@kernel
def combine(ss1, ss2, ss3, ss4, ss5):
    """Theorem 2: (minNR, which) with which = 0 (SS1), 1 (SS2·SS5), 2 (SS3·SS4).

    Ties prefer the earlier term (SS1 first: every individual in one group).
    """
    best = ss1
    which = 0
    b = mul(ss2, ss5)
    if b < best:
        best = b
        which = 1
    c = mul(ss3, ss4)
    if c < best:
        best = c
        which = 2
    return best, which


# ---------------------------------------------------------------------------- SkylineCheck
@kernel
def sigma_records(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, i0, i1,
                  case, l, v_bands, n_cross):
    """Select the occurrences of σ that can set a statistic at ℓ.

    The occurrences are ``i0 .. i1-1`` of the value index.

    An occurrence is dropped when an **earlier** group A *dominates* it: every term of A is
    <= the same term of this group B, so under the strict "<" of the minima B never changes
    a statistic or its first-group witness (also when the scan is cut into chunks: A's chunk
    comes first in the merge). Two tests, both exact:

    * same class (n, #σ), S_ℓ(A) >= S_ℓ(B): V equal, T(ℓ,k) non-increasing in S_ℓ (SVPI,
      multiset) — valid for every (k, m). Classes sit in a direct-mapped table; a slot
      collision forgets a class's record, which only keeps extra occurrences.
    * SVPI, across classes (``n_B <= n_cross``): n_A <= n_B, #σ_A >= #σ_B and d_A <= d_B
      with d = n − s − S_ℓ. T(ℓ,k) = max(0, d − k)/s and each V factor 1 − s/(n−k−i) are
      then no larger for A, and so are the computed values *when both groups take the same
      path* in :func:`v_value` (a correctly rounded quotient of exact integers, or a product
      of correctly rounded factors: both monotone). The path of V(m, k) changes where
      n − k crosses the largest N with N (N−1) ··· (N−m+1) <= 2**53; ``v_bands`` (sorted)
      holds those n for the m and k of the points checked, and A and B must lie in the
      same band (as many ``v_bands`` below n). ``n_cross`` keeps the products clear of
      underflow (the log path). Candidate dominators: up to ``_FRONT_SLOTS`` earlier
      occurrences. ``fastpriv.skyline._cross_class_guard`` derives both from the points.

    What remains is usually a few dozen occurrences per (σ, ℓ) even when every group is its
    own class (10k groups of ~1000 rows, 20 values: 1.2k of 200k occurrences over 20 σ ×
    4 ℓ). :func:`sigma_stats` and :func:`points_stats` over this list return exactly what
    they return over all occurrences, for the points the guard was built for. MVPI-Set keeps
    every occurrence (T depends on P_ℓ).
    """
    out = np.empty(i1 - i0, dtype=np.int64)
    if case == SET:
        for i in range(i0, i1):
            out[i - i0] = i
        return out
    key_n = np.full(_RECORD_SLOTS, -1, dtype=np.int64)
    key_s = np.full(_RECORD_SLOTS, -1, dtype=np.int64)
    best = np.empty(_RECORD_SLOTS, dtype=np.int64)
    f_n = np.empty(_FRONT_SLOTS, dtype=np.int64)
    f_s = np.empty(_FRONT_SLOTS, dtype=np.int64)
    f_d = np.empty(_FRONT_SLOTS, dtype=np.int64)
    f_band = np.empty(_FRONT_SLOTS, dtype=np.int64)
    n_front = 0
    rows = top.shape[0]
    lt = l if l < rows - 1 else rows - 1
    j = 0
    for i in range(i0, i1):
        g = p_group[i]
        s = p_count[i]
        n = sizes[g]
        r = p_rank[i]
        # S_ℓ as in sigma_stats (written out: a helper taking ``top`` costs 5× here)
        if rows > 0:
            if r >= l:
                big_s = top[lt, g]
            else:
                big_s = top[lt + 1 if lt < rows - 1 else lt, g] - s
        else:
            a = p_entry[i] - r
            big_s = top_sum(counts, a, indptr[g + 1] - a, r, l)
        h = (n * 40503 + s * 9973) & (_RECORD_SLOTS - 1)
        if key_n[h] == n and key_s[h] == s:
            if big_s <= best[h]:
                continue
        else:
            key_n[h] = n
            key_s[h] = s
        best[h] = big_s
        if case == SVPI and n <= n_cross:
            d = n - s - big_s
            band = np.searchsorted(v_bands, n)      # bands below n ("left")
            dominated = False
            for q in range(n_front):
                # non-short-circuit &: four compares, one branch
                if (f_n[q] <= n) & (f_s[q] >= s) & (f_d[q] <= d) & (f_band[q] == band):
                    dominated = True
                    if q > 0:               # a useful dominator moves half-way up
                        p = q >> 1
                        f_n[q], f_n[p] = f_n[p], f_n[q]
                        f_s[q], f_s[p] = f_s[p], f_s[q]
                        f_d[q], f_d[p] = f_d[p], f_d[q]
                        f_band[q], f_band[p] = f_band[p], f_band[q]
                    break
            if dominated:
                continue
            q = n_front if n_front < _FRONT_SLOTS else _FRONT_SLOTS - 1
            f_n[q] = n
            f_s[q] = s
            f_d[q] = d
            f_band[q] = band
            if n_front < _FRONT_SLOTS:
                n_front += 1
        out[j] = i
        j += 1
    return out[:j].copy()


def records_union(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, i0, i1,
                  case, ells, v_bands, n_cross):
    """Return the union of :func:`sigma_records` over several ℓ (``ells``), one ℓ a thread.

    Each ℓ's records come from one serial ``nogil`` call of :func:`sigma_records` on
    :func:`fastpriv._threads.run_chunks`; the per-ℓ lists are sorted, and so is their union
    (``np.unique``), as the per-ℓ lists are.
    """
    n_l = ells.shape[0]
    recs = run_chunks(lambda li: sigma_records(indptr, counts, sizes, top, p_entry, p_group,
                                               p_rank, p_count, i0, i1, case, ells[li],
                                               v_bands, n_cross), n_l)
    if not recs:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(recs)).astype(np.int64, copy=False)


@kernel
def sigma_stats(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, occ, j0, j1,
                case, l, k, m):
    """SkylineCheck of one (σ, ℓ, k, m): the five statistics and their first groups.

    Streams σ's occurrences ``occ[j0 .. j1-1]`` — positions in :attr:`Release.value_index`
    (group, rank, count), groups ascending: all of σ's occurrences, or the ones
    :func:`sigma_records` keeps at this ℓ (same result); σ-free groups are neutral (C1) and
    never visited. S_ℓ (the ℓ largest non-σ counts; counts are descending within a group) is
    ``top[ℓ, g]`` when σ ranks ℓ or later, else ``top[ℓ+1, g] − #σ`` — one read of the
    ℓ-major table :attr:`Release.top_prefix`; without the table (``top`` with 0 rows) it
    is summed from the profile.

    Groups of one class (n, s) share their V values, and their T is non-increasing in S_ℓ
    (SVPI, multiset). A direct-mapped table keyed by (n, s) keeps the class's V values and
    the largest S_ℓ seen so far: a later group of the class with S_ℓ no larger has every
    term ≥ that earlier group's, so under the strict "<" of the minima it cannot change a
    statistic or its witness and is skipped after two integer comparisons. The result is
    identical to evaluating every group. Returns ``(stats, args)``:
    ``stats = (SS1, SS2, SS3, SS4, SS5)`` and ``args`` the first group attaining each (-1
    while a statistic keeps its neutral value ∞ / 1).
    """
    ss1 = INF
    ss2 = INF
    ss3 = INF
    ss4 = 1.0
    ss5 = 1.0
    a1 = -1
    a2 = -1
    a3 = -1
    a4 = -1
    a5 = -1
    mkey_n = np.full(_MEMO_SLOTS, -1, dtype=np.int64)
    mkey_s = np.full(_MEMO_SLOTS, -1, dtype=np.int64)
    mval = np.empty((_MEMO_SLOTS, 3), dtype=np.float64)
    mbest = np.empty(_MEMO_SLOTS, dtype=np.int64)
    rows = top.shape[0]
    lt = l if l < rows - 1 else rows - 1
    for j in range(j0, j1):
        i = occ[j]
        g = p_group[i]
        r = p_rank[i]
        s = p_count[i]
        n = sizes[g]
        pl = 1.0
        if case == SET:
            a = p_entry[i] - r
            big_s = np.int64(0)
            pl = top_prod(counts, a, indptr[g + 1] - a, r, l, n)
        elif rows > 0:
            if r >= l:
                big_s = top[lt, g]
            else:
                big_s = top[lt + 1 if lt < rows - 1 else lt, g] - s
        else:
            a = p_entry[i] - r
            big_s = top_sum(counts, a, indptr[g + 1] - a, r, l)
        h = (n * 40503 + s * 9973) & (_MEMO_SLOTS - 1)
        if mkey_n[h] == n and mkey_s[h] == s:
            if case != SET:
                if big_s <= mbest[h]:
                    continue            # dominated by an earlier group of its class
                mbest[h] = big_s
            v0 = mval[h, 0]
            vk = mval[h, 1]
            vk1 = mval[h, 2]
        else:
            v0 = v_value(n, s, m, np.int64(0), case)
            vk = v_value(n, s, m, k, case)
            vk1 = v_value(n, s, m, k + 1, case)
            mkey_n[h] = n
            mkey_s[h] = s
            mval[h, 0] = v0
            mval[h, 1] = vk
            mval[h, 2] = vk1
            mbest[h] = big_s
        if case == SVPI:
            # T inline (same expression as t_value): helper calls dominate otherwise
            num = n - s - big_s
            t0 = num / s if num > 0 else 0.0
            num -= k
            tk = num / s if num > 0 else 0.0
        else:
            t0 = t_value(n, s, big_s, np.int64(0), case, pl)
            tk = t_value(n, s, big_s, k, case, pl)
        nr1 = tk * vk1          # mul(): T, V finite here
        if nr1 == 0.0 and tk > 0.0 and vk1 > 0.0:
            nr1 = TINY
        if nr1 < ss1:
            ss1 = nr1
            a1 = g
        if t0 < ss2:
            ss2 = t0
            a2 = g
        if tk < ss3:
            ss3 = tk
            a3 = g
        if v0 < ss4:
            ss4 = v0
            a4 = g
        if vk < ss5:
            ss5 = vk
            a5 = g
    stats = np.empty(5, dtype=np.float64)
    args = np.empty(5, dtype=np.int64)
    stats[0] = ss1
    stats[1] = ss2
    stats[2] = ss3
    stats[3] = ss4
    stats[4] = ss5
    args[0] = a1
    args[1] = a2
    args[2] = a3
    args[3] = a4
    args[4] = a5
    return stats, args


def check_sigma(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, occ, j0, j1,
                case, pt_l, pt_k, pt_m):
    """SkylineCheck of one σ and several points: :func:`sigma_stats` for each point.

    Point-major: every point streams the occurrences ``occ[j0 .. j1-1]`` (all of σ's, or
    the :func:`sigma_records` of the points' common ℓ), which is faster than one
    group-major pass carrying per-point state; from :data:`GROUP_MAJOR_POINTS` points on,
    one group-major :func:`points_stats` pass. Returns ``(stats, args)`` of shape
    ``(points, 5)``. A Python driver (fewer than 8 calls of a ``nogil`` kernel that each
    stream every occurrence): as a kernel it linked both scans once more (0.7 CPU-s of
    every cold process that checks a skyline).
    """
    n_pts = pt_l.shape[0]
    if n_pts >= GROUP_MAJOR_POINTS:
        return points_stats(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count,
                            occ, j0, j1, case, pt_l, pt_k, pt_m)
    stats = np.empty((n_pts, 5), dtype=np.float64)
    args = np.empty((n_pts, 5), dtype=np.int64)
    for p in range(n_pts):
        st, ar = sigma_stats(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count,
                             occ, j0, j1, case, pt_l[p], pt_k[p], pt_m[p])
        stats[p] = st
        args[p] = ar
    return stats, args


@kernel(helper=True)
def _combo_ids(a, b):
    """Dense ids of the distinct pairs (a[i], b[i]): ``(ids, first_a, first_b)``."""
    n = a.shape[0]
    ids = np.empty(n, dtype=np.int64)
    ua = np.empty(n, dtype=np.int64)
    ub = np.empty(n, dtype=np.int64)
    u = 0
    for i in range(n):
        found = -1
        for q in range(u):
            if ua[q] == a[i] and ub[q] == b[i]:
                found = q
                break
        if found < 0:
            ua[u] = a[i]
            ub[u] = b[i]
            found = u
            u += 1
        ids[i] = found
    return ids, ua[:u].copy(), ub[:u].copy()


@kernel
def points_stats(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, occ, j0, j1,
                 case, pt_l, pt_k, pt_m):
    """:func:`check_sigma` for many points of one σ, group-major: identical results.

    Every point needs T at (ℓ, 0) and (ℓ, k) and V at (m, 0), (m, k), (m, k+1); across a
    skyline these repeat (V does not depend on ℓ, T not on m). Each occurrence computes
    every *distinct* T and V once, then each point reads its five terms and updates its
    minima — O(occurrences · (distinct terms + points)) instead of
    O(occurrences · points · 3 V products). Groups are visited in order and every minimum
    is strict, so the witnesses are the first groups, as in :func:`sigma_stats`. ``occ``
    may hold extra occurrences (e.g. the union of several ℓ's records): an occurrence
    dominated within its class never changes a strict minimum.

    Four of the five statistics are minima of one term (T(ℓ,0), T(ℓ,k), V(m,0), V(m,k)), so
    the minima are kept per *distinct term* and handed to the points at the end; only
    min T(ℓ,k)·V(m,k+1) is kept per point. On a 100-point skyline that is ~50 term minima
    and 100 products per occurrence instead of 500 point minima (same first-group
    witnesses: the same strict comparisons in the same order).
    """
    n_pts = pt_l.shape[0]
    zero = np.zeros(n_pts, dtype=np.int64)
    kp1 = pt_k + 1
    # distinct S_ℓ (or P_ℓ), T and V arguments
    l_id, ells, _ = _combo_ids(pt_l.copy(), zero)   # (one specialization: writable)
    tall = np.concatenate((l_id, l_id))
    tks = np.concatenate((zero, pt_k))
    t_id, t_li, t_k = _combo_ids(tall, tks)
    v_all_m = np.concatenate((pt_m, pt_m, pt_m))
    v_all_k = np.concatenate((zero, pt_k, kp1))
    v_id, v_m, v_k = _combo_ids(v_all_m, v_all_k)
    n_l = ells.shape[0]
    n_t = t_li.shape[0]
    n_v = v_m.shape[0]
    big = np.empty(n_l, dtype=np.int64)
    pls = np.ones(n_l, dtype=np.float64)
    tv = np.empty(n_t, dtype=np.float64)
    vv = np.empty(n_v, dtype=np.float64)
    # running minima: per point (the product), per T term (init +inf), per V term (init 1)
    pmin = np.full(n_pts, INF)
    parg = np.full(n_pts, -1, dtype=np.int64)
    tmin = np.full(n_t, INF)
    targ = np.full(n_t, -1, dtype=np.int64)
    vmin = np.ones(n_v, dtype=np.float64)
    varg = np.full(n_v, -1, dtype=np.int64)
    p_tk = t_id[n_pts:].copy()           # T(ℓ, k) and V(m, k+1) of each point
    p_vk1 = v_id[2 * n_pts:].copy()
    rows = top.shape[0]
    for j in range(j0, j1):
        i = occ[j]
        g = p_group[i]
        r = p_rank[i]
        s = p_count[i]
        n = sizes[g]
        a = p_entry[i] - r
        d = indptr[g + 1] - a
        for li in range(n_l):
            l = ells[li]
            if case == SET:
                big[li] = 0
                pls[li] = top_prod(counts, a, d, r, l, n)
            elif rows > 0:
                lt = l if l < rows - 1 else rows - 1
                if r >= l:
                    big[li] = top[lt, g]
                else:
                    big[li] = top[lt + 1 if lt < rows - 1 else lt, g] - s
            else:
                big[li] = top_sum(counts, a, d, r, l)
        for q in range(n_t):
            li = t_li[q]
            x = t_value(n, s, big[li], t_k[q], case, pls[li])
            tv[q] = x
            if x < tmin[q]:
                tmin[q] = x
                targ[q] = g
        for q in range(n_v):
            x = v_value(n, s, v_m[q], v_k[q], case)
            vv[q] = x
            if x < vmin[q]:
                vmin[q] = x
                varg[q] = g
        for p in range(n_pts):
            tk = tv[p_tk[p]]
            vk1 = vv[p_vk1[p]]
            nr1 = tk * vk1          # mul(): T, V finite here
            if nr1 == 0.0 and tk > 0.0 and vk1 > 0.0:
                nr1 = TINY
            if nr1 < pmin[p]:
                pmin[p] = nr1
                parg[p] = g
    stats = np.empty((n_pts, 5), dtype=np.float64)
    args = np.empty((n_pts, 5), dtype=np.int64)
    for p in range(n_pts):
        stats[p, 0] = pmin[p]
        args[p, 0] = parg[p]
        for j, q in ((1, t_id[p]), (2, t_id[n_pts + p])):
            stats[p, j] = tmin[q]
            args[p, j] = targ[q]
        for j, q in ((3, v_id[p]), (4, v_id[n_pts + p])):
            stats[p, j] = vmin[q]
            args[p, j] = varg[q]
    return stats, args


def check_sigma_parallel(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, occ,
                         j0, j1, case, pt_l, pt_k, pt_m, n_chunks):
    """:func:`check_sigma` over ``n_chunks`` contiguous ranges of ``occ[j0:j1]``, merged.

    The statistics are min-reductions, so chunks are independent: each is one serial
    ``nogil`` call of :func:`check_sigma` on :func:`fastpriv._threads.run_chunks`. The
    merge visits chunks in group order and takes a chunk's value only when strictly
    smaller, so ties resolve to the first group exactly as in the sequential scan.
    """
    n_chunks = max(int(n_chunks), 1)
    span = j1 - j0

    def chunk(c: int):
        a, b = chunk_bounds(span, n_chunks, c)
        return check_sigma(indptr, counts, sizes, top, p_entry, p_group, p_rank, p_count, occ,
                           j0 + a, j0 + b, case, pt_l, pt_k, pt_m)

    parts = run_chunks(chunk, n_chunks)
    stats, args = parts[0][0].copy(), parts[0][1].copy()
    for st, ar in parts[1:]:
        better = st < stats
        stats[better] = st[better]
        args[better] = ar[better]
    return stats, args


# ------------------------------------------------------------------ SkylineCheck by classes
@kernel
def class_layout(indptr, counts, sizes, max_cells):
    """Dense ids for the classes (n, s) of the release: ``(n_map, base, cls_n, cls_s)``.

    ``n_map[n]`` is the id of group size n (-1 if absent); the classes of size id i are
    ``base[i] + s - 1`` for s = 1 .. span_i, span_i = the largest count in a group of that
    size (≥ every #σ there). Returns empty arrays when the layout would exceed ``max_cells``
    classes or the size range is too wide for a dense map (the caller then uses the direct
    kernel).
    """
    n_groups = sizes.shape[0]
    nmax = 0
    for g in range(n_groups):
        if sizes[g] > nmax:
            nmax = sizes[g]
    empty = np.empty(0, dtype=np.int64)
    if nmax > 4 * n_groups + 4096:
        return empty, empty, empty, empty
    span = np.zeros(nmax + 1, dtype=np.int64)
    seen = np.zeros(nmax + 1, dtype=np.bool_)
    for g in range(n_groups):
        n = sizes[g]
        seen[n] = True
        if indptr[g + 1] > indptr[g]:
            top = counts[indptr[g]]
            if top > span[n]:
                span[n] = top
    n_map = np.full(nmax + 1, -1, dtype=np.int64)
    n_ids = 0
    total = 0
    for n in range(nmax + 1):
        if seen[n]:
            n_map[n] = n_ids
            n_ids += 1
            total += span[n]
    if total > max_cells:
        return empty, empty, empty, empty
    base = np.zeros(n_ids + 1, dtype=np.int64)
    cls_n = np.empty(total, dtype=np.int64)
    cls_s = np.empty(total, dtype=np.int64)
    i = 0
    c = 0
    for n in range(nmax + 1):
        if seen[n]:
            base[i] = c
            for s in range(1, span[n] + 1):
                cls_n[c] = n
                cls_s[c] = s
                c += 1
            i += 1
    base[n_ids] = c
    return n_map, base, cls_n, cls_s


@kernel
def class_pass(indptr, codes, counts, sizes, case, sig_slot, n_sig, ells, need, n_map, base,
               n_cls, ks, g0, g1):
    """Pass 1 of SkylineCheck by classes: one scan of the groups.

    For every requested σ (``sig_slot[code]`` ≥ 0), class (n, s) and requested ℓ
    (``ells[li]``, where ``need[slot, li]``), keep the group with the largest S_ℓ (SVPI,
    multiset) or the smallest P_ℓ (Set) — within a class T(ℓ,k) is monotone in that one
    number and V does not depend on the group, so this best group attains every per-class
    minimum of Theorem 2. Returns ``(best_s, best_p, best_g, first_g, zero_g)``;
    ``first_g[slot, c]`` is the first group of the class (-1: class absent). Scans groups
    ``g0 .. g1-1``.

    ``zero_g[slot, li, i]`` (SVPI): the first group whose deficit d = n − s − S_ℓ lies in
    ``(ks[i-1], ks[i]]`` (``ks``: the points' distinct k, ascending, with 0) — T(ℓ, k) = 0
    exactly when d ≤ k, so the first group of any class with T = 0 is the smallest of
    ``zero_g[slot, li, :i+1]`` (the witness the direct scan names; the class's best group
    need not be it).
    """
    n_l = ells.shape[0]
    n_k = ks.shape[0]
    best_s = np.full((n_sig, n_cls, n_l), -1, dtype=np.int64)
    best_p = np.full((n_sig, n_cls, n_l), INF)
    best_g = np.full((n_sig, n_cls, n_l), -1, dtype=np.int64)
    first_g = np.full((n_sig, n_cls), -1, dtype=np.int64)
    zero_g = np.full((n_sig, n_l, n_k), -1, dtype=np.int64)
    l_max = 0
    for li in range(n_l):
        if ells[li] > l_max:
            l_max = ells[li]
    pre = np.zeros(l_max + 2, dtype=np.int64)
    single = -1
    if n_sig == 1:
        for c in range(sig_slot.shape[0]):
            if sig_slot[c] == 0:
                single = c
    for g in range(g0, g1):
        a = indptr[g]
        b = indptr[g + 1]
        d = b - a
        if d == 0:
            continue
        if single >= 0:
            r0 = find_rank(codes, a, b, np.int64(single))
            if r0 < 0:
                continue
            e0 = a + r0
            e1 = e0 + 1
        else:
            e0 = a
            e1 = b
        n = sizes[g]
        cbase = base[n_map[n]]
        lim = d if d < l_max + 1 else l_max + 1
        acc = 0
        for j in range(lim):
            acc += counts[a + j]
            pre[j + 1] = acc
        for e in range(e0, e1):
            slot = sig_slot[codes[e]]
            if slot < 0:
                continue
            s = counts[e]
            r = e - a
            cls = cbase + s - 1
            if first_g[slot, cls] < 0:
                first_g[slot, cls] = g
            for li in range(n_l):
                if not need[slot, li]:
                    continue
                l = ells[li]
                if case == SET:
                    p = top_prod(counts, a, d, r, l, n)
                    if p < best_p[slot, cls, li]:
                        best_p[slot, cls, li] = p
                        best_g[slot, cls, li] = g
                else:
                    ll = l if l < d - 1 else d - 1
                    big_s = pre[ll] if r >= ll else pre[ll + 1] - s
                    if big_s > best_s[slot, cls, li]:
                        best_s[slot, cls, li] = big_s
                        best_g[slot, cls, li] = g
                    if case == SVPI:
                        deficit = n - s - big_s
                        for ki in range(n_k):
                            if ks[ki] >= deficit:
                                if zero_g[slot, li, ki] < 0:
                                    zero_g[slot, li, ki] = g
                                break
    return best_s, best_p, best_g, first_g, zero_g


def class_pass_parallel(indptr, codes, counts, sizes, case, sig_slot, n_sig, ells, need, n_map,
                        base, n_cls, ks, n_chunks):
    """Run :func:`class_pass` over ``n_chunks`` group ranges on threads and merge.

    Each range is one serial ``nogil`` call of :func:`class_pass` on
    :func:`fastpriv._threads.run_chunks`. The merge visits chunks in group order (ties keep
    the earlier chunk: the smaller group).
    """
    n_chunks = max(int(n_chunks), 1)
    n_groups = sizes.shape[0]
    parts = run_chunks(lambda c: class_pass(indptr, codes, counts, sizes, case, sig_slot,
                                            n_sig, ells, need, n_map, base, n_cls, ks,
                                            *chunk_bounds(n_groups, n_chunks, c)), n_chunks)
    best_s, best_p, best_g, first_g, zero_g = (x.copy() for x in parts[0])
    for bs, bp, bg, fg, zg in parts[1:]:
        np.copyto(first_g, fg, where=first_g < 0)
        np.copyto(zero_g, zg, where=zero_g < 0)
        better = (bp < best_p) if case == SET else (bs > best_s)
        take = (bg >= 0) & (better | (best_g < 0))
        best_s[take] = bs[take]
        best_p[take] = bp[take]
        best_g[take] = bg[take]
    return best_s, best_p, best_g, first_g, zero_g


@kernel(inline="always")
def _first_zero(zero_g, slot, li, ki):
    """Return the first group with T(ℓ, ks[ki]) = 0 (SVPI; -1: none), see class_pass."""
    out = -1
    for i in range(ki + 1):
        g = zero_g[slot, li, i]
        if g >= 0 and (out < 0 or g < out):
            out = g
    return out


@kernel
def class_points(case, cls_n, cls_s, best_s, best_p, best_g, first_g, zero_g, pt_slot, pt_li,
                 pt_k, pt_ki, pt_m):
    """Pass 2: the five statistics of every point from the per-class bests, O(classes) each.

    Ties resolve to the smaller group index, the direct scan's "first group": within a
    class T is strictly monotone in S_ℓ (P_ℓ) while positive, so the best group is the
    first to attain a positive minimum; a zero T is attained by every group of the class
    (multiset; Set when n − s − k ≤ 0; V_{k+1} = 0 for SS1: the class's first group), by
    the groups with P_ℓ = 0 (Set: the best group is the first), or, SVPI, by every group
    whose deficit is at most k (``zero_g``, ``pt_ki``: the index of the point's k in it).
    """
    n_pts = pt_slot.shape[0]
    n_cls = cls_n.shape[0]
    stats = np.empty((n_pts, 5), dtype=np.float64)
    args = np.full((n_pts, 5), -1, dtype=np.int64)
    for p in range(n_pts):
        stats[p, 0] = INF
        stats[p, 1] = INF
        stats[p, 2] = INF
        stats[p, 3] = 1.0
        stats[p, 4] = 1.0
        slot = pt_slot[p]
        li = pt_li[p]
        k = pt_k[p]
        m = pt_m[p]
        v_zero = -1           # first group of a class with V_{k+1} = 0 (SS1 = 0 there)
        for c in range(n_cls):
            g1 = first_g[slot, c]
            if g1 < 0:
                continue
            n = cls_n[c]
            s = cls_s[c]
            gb = best_g[slot, c, li]
            big_s = best_s[slot, c, li]
            pl = best_p[slot, c, li]
            if case != SET:
                pl = 1.0
            else:
                big_s = 0
            t0 = t_value(n, s, big_s, np.int64(0), case, pl)
            tk = t_value(n, s, big_s, k, case, pl)
            v0 = v_value(n, s, m, np.int64(0), case)
            vk = v_value(n, s, m, k, case)
            vk1 = v_value(n, s, m, k + 1, case)
            if vk1 == 0.0 and (v_zero < 0 or g1 < v_zero):
                v_zero = g1
            nr1 = mul(tk, vk1)
            vals = (nr1, t0, tk, v0, vk)
            # a zero that every group of the class attains (its first group is the witness):
            # multiset T = 0 (k ≥ n − 1), Set T = 0 from n − s − k ≤ 0 (not from P_ℓ = 0,
            # which is group-specific: the best group is the first), V_{k+1} = 0 for SS1
            wide_t0 = case == MULTISET or (case == SET and n - s <= 0)
            wide_tk = case == MULTISET or (case == SET and n - s - k <= 0)
            wide = (case != SVPI and (wide_tk or vk1 == 0.0), wide_t0, wide_tk)
            for j in range(5):
                x = vals[j]
                gg = gb if j < 3 else g1
                if j < 3 and x == 0.0 and wide[j]:
                    gg = g1
                if x < stats[p, j] or (x == stats[p, j] and args[p, j] >= 0
                                       and gg < args[p, j]):
                    if j >= 3 and x >= 1.0:
                        continue   # V = 1 is the neutral value: no witness group
                    stats[p, j] = x
                    args[p, j] = gg
        if case == SVPI:    # a zero minimum: the first group of any class attaining it
            if stats[p, 1] == 0.0:
                args[p, 1] = _first_zero(zero_g, slot, li, np.int64(0))
            if stats[p, 2] == 0.0:
                args[p, 2] = _first_zero(zero_g, slot, li, pt_ki[p])
            if stats[p, 0] == 0.0:
                g = _first_zero(zero_g, slot, li, pt_ki[p])
                if v_zero >= 0 and (g < 0 or v_zero < g):
                    g = v_zero
                args[p, 0] = g
    return stats, args


# ---------------------------------------------------------------------------- per-σ tables
@kernel
def sigma_profile(indptr, codes, counts, sizes, sig, width):
    """Extract the groups containing σ: ``(group, n, s, distinct, top)``.

    ``top[i, :]`` holds the ``width`` largest counts of values other than σ in that group,
    descending and zero-padded; ``distinct`` the number of non-σ values of each such group.
    """
    n_groups = sizes.shape[0]
    cnt = 0
    for g in range(n_groups):
        if find_rank(codes, indptr[g], indptr[g + 1], sig) >= 0:
            cnt += 1
    gidx = np.empty(cnt, dtype=np.int64)
    nn = np.empty(cnt, dtype=np.int64)
    ss = np.empty(cnt, dtype=np.int64)
    dd = np.empty(cnt, dtype=np.int64)
    top = np.zeros((cnt, width), dtype=np.int64)
    i = 0
    for g in range(n_groups):
        a = indptr[g]
        b = indptr[g + 1]
        r = find_rank(codes, a, b, sig)
        if r < 0:
            continue
        gidx[i] = g
        nn[i] = sizes[g]
        ss[i] = counts[a + r]
        dd[i] = b - a - 1
        j = 0
        for e in range(a, b):
            if e - a == r:
                continue
            if j >= width:
                break
            top[i, j] = counts[e]
            j += 1
        i += 1
    return gidx, nn, ss, dd, top


@kernel
def group_terms(case, nn, ss, top, l, k, m):
    """Per σ-group (rows of :func:`sigma_profile`): T(ℓ,0), T(ℓ,k), V(m,0), V(m,k), minNR.

    Returns a ``(G_σ, 5)`` array; column j is the per-group term whose minimum is SS(j+1).
    """
    cnt = nn.shape[0]
    width = top.shape[1]
    out = np.empty((cnt, 5), dtype=np.float64)
    for i in range(cnt):
        n = nn[i]
        s = ss[i]
        ll = l if l < width else width
        big_s = np.int64(0)
        pl = 1.0
        for j in range(ll):
            c = top[i, j]
            big_s += c
            if case == SET:
                pl = mul(pl, (n - c) / n)
        t0 = t_value(n, s, big_s, np.int64(0), case, pl)
        tk = t_value(n, s, big_s, k, case, pl)
        out[i, 0] = mul(tk, v_value(n, s, m, k + 1, case))
        out[i, 1] = t0
        out[i, 2] = tk
        out[i, 3] = v_value(n, s, m, np.int64(0), case)
        out[i, 4] = v_value(n, s, m, k, case)
    return out


@kernel
def prefix_tables(case, nn, top):
    """Build per σ-group prefix tables over ℓ = 0..width, ℓ-major.

    As in :func:`sigma_columns`: ``big_s[ℓ, i]`` = S_ℓ (int64), ``pl[ℓ, i]`` = P_ℓ
    (float64, Set).
    """
    cnt = nn.shape[0]
    width = top.shape[1]
    big_s = np.zeros((width + 1, cnt), dtype=np.int64)
    pl = np.ones((width + 1, cnt), dtype=np.float64)
    for i in range(cnt):
        n = nn[i]
        for j in range(width):
            big_s[j + 1, i] = big_s[j, i] + top[i, j]
            if case == SET:
                pl[j + 1, i] = mul(pl[j, i], (n - top[i, j]) / n)
    return big_s, pl


# ---------------------------------------------------------------------------- A6 DP
@kernel(helper=True)
def dp_group_tables(counts, a, b, n, r, case, l, k, m, tt, vt):
    """Fill T(f,ℓ,kk) (kk ≤ k) into ``tt`` and V(f,mm,kk) into ``vt[kk, mm]`` (kk ≤ k+1).

    One group read from the CSR profile; ``r`` = rank of σ in the group (-1: σ-free).
    """
    if r < 0:
        # C1: σ-free group, T = +inf, V = 1
        for kk in range(k + 1):
            tt[kk] = INF
        for kk in range(k + 2):
            for mm in range(m + 1):
                vt[kk, mm] = 1.0
        return
    d = b - a
    s = counts[a + r]
    big_s = top_sum(counts, a, d, r, l)
    pl = 1.0
    if case == SET:
        pl = top_prod(counts, a, d, r, l, n)
    dp_fill_tables(n, s, big_s, pl, case, k, m, tt, vt)


@kernel(helper=True)
def dp_fill_tables(n, s, big_s, pl, case, k, m, tt, vt):
    """T and V tables of a group with σ (s >= 1) from (n, s, S_ℓ, P_ℓ)."""
    for kk in range(k + 1):
        tt[kk] = t_value(n, s, big_s, np.int64(kk), case, pl)
    if case == MULTISET or m > LONG_PRODUCT:
        for kk in range(k + 2):
            for mm in range(m + 1):
                vt[kk, mm] = v_value(n, s, np.int64(mm), np.int64(kk), case)
        return
    # running products, mirroring v_value exactly: the integer ratio while the
    # denominator fits in 53 bits, else the product of rounded factors
    for kk in range(k + 2):
        big_n = n - kk
        top = big_n - s
        vt[kk, 0] = 1.0
        v = 1.0
        num = 1.0
        den = 1.0
        is_exact = True
        for mm in range(m):
            if top - mm <= 0:
                v = 0.0
                vt[kk, mm + 1] = 0.0
                continue
            if is_exact:
                den *= big_n - mm
                if den > EXACT_INT:
                    is_exact = False
                else:
                    num *= top - mm
            if v > 0.0:
                v *= (top - mm) / (big_n - mm)
            vt[kk, mm + 1] = num / den if is_exact else v
        if v == 0.0 and top - (m - 1) > 0:
            # an underflowed long product: recompute as v_value does
            for mm in range(m + 1):
                vt[kk, mm] = v_value(n, s, np.int64(mm), np.int64(kk), case)


@kernel(inline="always")
def _dp_buffers(k, m):
    """A6 state at the start (without[0,0] = 1, all else +∞) and its scratch tables."""
    with_ = np.full((k + 1, m + 1), INF)
    without = np.full((k + 1, m + 1), INF)
    without[0, 0] = 1.0
    return (with_, without, np.empty((k + 1, m + 1)), np.empty((k + 1, m + 1)),
            np.empty(k + 1), np.empty((k + 2, m + 1)))


@kernel(helper=True)
def dp_step(with_, without, new_with, new_without, tt, vt, k, m):
    """One group of the A6 recurrences (O(k²m²)); see :func:`dp_min_nr`.

    Plain products: +∞·0 gives NaN, which never compares smaller, so an unreachable state
    (+∞) is ignored exactly as C4 (+∞·0 = +∞) requires. Row views and branch-free minima
    keep the inner loop tight (a fair, compiled baseline).
    """
    for kk in range(k + 1):
        for mm in range(m + 1):
            best_wo = INF
            best_w = INF
            best_z = INF
            for i in range(kk + 1):
                a = kk - i
                t = tt[a]
                w_row = without[i]
                h_row = with_[i]
                v_row = vt[a]
                v1_row = vt[a + 1]
                for j in range(mm + 1):
                    wo = w_row[j]
                    v = v_row[mm - j]
                    x = wo * v
                    best_wo = x if x < best_wo else best_wo
                    y = h_row[j] * v
                    best_w = y if y < best_w else best_w
                    z = wo * t * v1_row[mm - j]
                    best_z = z if z < best_z else best_z
            new_without[kk, mm] = best_wo
            new_with[kk, mm] = best_z if best_z < best_w else best_w


@kernel
def dp_min_nr(indptr, codes, counts, sizes, case, sig, l, k, m):
    """minNR(ℓ,k,m) by the Appendix A6 dynamic program (no congregation property).

    ``without[i, j]`` / ``with_[i, j]``: minimum negated ratio with i u's and j v's placed in
    the groups seen so far, t not yet placed / placed. For each group f, for all K ≤ k,
    M ≤ m (O(k²m²) per group):

    * without'[K,M] = min_{i≤K, j≤M} without[i,j] · V(f, M−j, K−i)
    * with'[K,M] = min( min_{i,j} with[i,j] · V(f, M−j, K−i),
      min_{i,j} without[i,j] · T(f,ℓ,K−i) · V(f, M−j, K−i+1) )

    Base: without[0,0] = 1, everything else +∞; the answer is with[k, m] after the last
    group. Reads the CSR profile directly, searching σ in every group; the per-group T and
    V use the same helpers as SkylineCheck, so the two agree to the last bit whenever the
    minimizing placement is the same.
    """
    n_groups = sizes.shape[0]
    with_, without, new_with, new_without, tt, vt = _dp_buffers(k, m)
    for f in range(n_groups):
        a = indptr[f]
        b = indptr[f + 1]
        r = find_rank(codes, a, b, sig)
        dp_group_tables(counts, a, b, sizes[f], r, case, l, k, m, tt, vt)
        dp_step(with_, without, new_with, new_without, tt, vt, k, m)
        with_, new_with = new_with, with_
        without, new_without = new_without, without
    return with_[k, m]


# ---------------------------------------------------------------------------- prepared columns
@kernel
def sigma_columns(indptr, codes, counts, sizes, sig, width):
    """Per-group inputs of one σ over **all** groups, for repeated evaluation.

    Returns ``(nn, ss, big_s, pl)``: n_g, #σ_g (0 for σ-free groups), and for ℓ = 0..width
    the prefix tables ``big_s[ℓ, g]`` = S_ℓ (int64) and ``pl[ℓ, g]`` = P_ℓ (float64, the
    MVPI-Set factor) of the non-σ counts — stored ℓ-major, so one evaluation streams the
    rows of its ℓ.
    """
    n_groups = sizes.shape[0]
    nn = np.empty(n_groups, dtype=np.int64)
    ss = np.zeros(n_groups, dtype=np.int64)
    big_s = np.zeros((width + 1, n_groups), dtype=np.int64)
    pl = np.ones((width + 1, n_groups), dtype=np.float64)
    for g in range(n_groups):
        a = indptr[g]
        b = indptr[g + 1]
        n = sizes[g]
        nn[g] = n
        r = find_rank(codes, a, b, sig)
        if r >= 0:
            ss[g] = counts[a + r]
        j = 0
        for e in range(a, b):
            if e - a == r:
                continue
            if j >= width:
                break
            c = counts[e]
            big_s[j + 1, g] = big_s[j, g] + c
            pl[j + 1, g] = mul(pl[j, g], (n - c) / n)
            j += 1
        for jj in range(j, width):
            big_s[jj + 1, g] = big_s[jj, g]
            pl[jj + 1, g] = pl[jj, g]
    return nn, ss, big_s, pl


@kernel
def columns_stats(case, nn, ss, big_s, pl, l, k, m):
    """SkylineCheck for one (σ, ℓ, k, m) from prepared columns: (stats[5], args[5]).

    Rows with ss = 0 (σ-free groups) are neutral. The same loop as :func:`sigma_stats`
    (class table of V values and largest S_ℓ, dominated groups skipped) on prepared rows.
    """
    ss1 = INF
    ss2 = INF
    ss3 = INF
    ss4 = 1.0
    ss5 = 1.0
    a1 = -1
    a2 = -1
    a3 = -1
    a4 = -1
    a5 = -1
    mkey_n = np.full(_MEMO_SLOTS, -1, dtype=np.int64)
    mkey_s = np.full(_MEMO_SLOTS, -1, dtype=np.int64)
    mval = np.empty((_MEMO_SLOTS, 3), dtype=np.float64)
    mbest = np.empty(_MEMO_SLOTS, dtype=np.int64)
    s_row = big_s[l]
    p_row = pl[l]
    for g in range(nn.shape[0]):
        s = ss[g]
        if s == 0:
            continue
        n = nn[g]
        sv = s_row[g]
        pv = p_row[g]
        h = (n * 40503 + s * 9973) & (_MEMO_SLOTS - 1)
        if mkey_n[h] == n and mkey_s[h] == s:
            if case != SET:
                if sv <= mbest[h]:
                    continue            # dominated by an earlier group of its class
                mbest[h] = sv
            v0 = mval[h, 0]
            vk = mval[h, 1]
            vk1 = mval[h, 2]
        else:
            v0 = v_value(n, s, m, np.int64(0), case)
            vk = v_value(n, s, m, k, case)
            vk1 = v_value(n, s, m, k + 1, case)
            mkey_n[h] = n
            mkey_s[h] = s
            mval[h, 0] = v0
            mval[h, 1] = vk
            mval[h, 2] = vk1
            mbest[h] = sv
        if case == SVPI:
            # T inline (same expression as t_value): helper calls dominate otherwise
            num = n - s - sv
            t0 = num / s if num > 0 else 0.0
            num -= k
            tk = num / s if num > 0 else 0.0
        else:
            t0 = t_value(n, s, sv, np.int64(0), case, pv)
            tk = t_value(n, s, sv, k, case, pv)
        nr1 = tk * vk1          # mul(): T, V finite here
        if nr1 == 0.0 and tk > 0.0 and vk1 > 0.0:
            nr1 = TINY
        if nr1 < ss1:
            ss1 = nr1
            a1 = g
        if t0 < ss2:
            ss2 = t0
            a2 = g
        if tk < ss3:
            ss3 = tk
            a3 = g
        if v0 < ss4:
            ss4 = v0
            a4 = g
        if vk < ss5:
            ss5 = vk
            a5 = g
    stats = np.empty(5, dtype=np.float64)
    args = np.empty(5, dtype=np.int64)
    stats[0] = ss1
    stats[1] = ss2
    stats[2] = ss3
    stats[3] = ss4
    stats[4] = ss5
    args[0] = a1
    args[1] = a2
    args[2] = a3
    args[3] = a4
    args[4] = a5
    return stats, args


@kernel
def columns_min_nr(case, nn, ss, big_s, pl, l, k, m):
    """minNR(ℓ,k,m) (Theorem 2) from prepared columns (knowledge skyline search)."""
    stats, args = columns_stats(case, nn, ss, big_s, pl, l, k, m)
    best, which = combine(stats[0], stats[1], stats[2], stats[3], stats[4])
    return best


@kernel
def dp_columns(case, nn, ss, big_s, pl, l, k, m):
    """Run the A6 dynamic program from prepared columns (every group, σ-free included)."""
    n_groups = nn.shape[0]
    with_, without, new_with, new_without, tt, vt = _dp_buffers(k, m)
    for f in range(n_groups):
        s = ss[f]
        if s == 0:
            for kk in range(k + 1):
                tt[kk] = INF
            for kk in range(k + 2):
                for mm in range(m + 1):
                    vt[kk, mm] = 1.0
        else:
            dp_fill_tables(nn[f], s, big_s[l, f], pl[l, f], case, k, m, tt, vt)
        dp_step(with_, without, new_with, new_without, tt, vt, k, m)
        with_, new_with = new_with, with_
        without, new_without = new_without, without
    return with_[k, m]
