"""ART kernels: bottom-up merging for r-robustness (Wong et al.; spec robustness.md §ART).

Inputs are per-row codes prepared by :mod:`fastpriv.anonymize._art`:

* ``F`` (profiles × attribute sets × sensitive values, float64): f = p(sig_A(t) : x) of
  every *profile* — a distinct vector of the adversary's probabilities over every
  attribute set A and every value x of the sensitive set X_s; rows with equal profiles are
  indistinguishable to ART. Profiles are numbered in lexicographic order of their vectors.
* ``row_prof`` (profile of each row), ``row_cls`` (0 for a row whose value is outside
  X_s, 1 + j for the j-th value of X_s), ``row_rank`` (dense lexicographic rank of the
  row's exact QI tuple), ``sorted_rows`` (rows sorted by (profile, class, rank, row)).

The merging rules (the slow reference ``tests/naive_anonymizers.art_reference`` follows the
same text literally):

1. Every row starts as its own group. For a group L and x ∈ X_s: N = |L|, and per
   attribute set A: f_max,A / f_min,A over L's rows, Δ_A = f_max,A − f_min,A. The
   **required size** is N′_o = max_A min_size(Δ_A, r, f_max,A) — the smallest integer
   N ≥ max(2, ⌈r⌉) with Δ_A ≤ Δ_ceil(N, r, f_max,A) (inequality 5 and Theorem 1), infinite
   when none exists or when it exceeds the number of rows. L satisfies the Δ condition
   for x iff N ≥ N′_o. (``mode`` = :data:`EXACT` replaces the Δ condition by the exact
   binary posterior of a value occurring once, p_j = o_j / Σ o with o = f / (1 − f):
   L satisfies x iff r · max_j o_j ≤ Σ_j o_j for every A — the sizes are then whatever
   that needs; infeasible means some f = 1.)
2. Passes until a pass merges nothing: for x in X_s order, for each row h holding x in row
   order, L = group(h): while N < N′_o: merge L with the **closest** group L′ — any group
   ≠ L with no X_s value in common with L (m-uniqueness) minimizing
   D(L, L′) = Σ_A [(max(f_max,A(L), f_max,A(L′)) − min(f_min,A(L), f_min,A(L′))) − Δ_A(L)]
   (Wong's Definition 6, for the value x), among the candidates that keep N′_o finite —
   a merge giving some attribute set f_min = 0 < f_max or f_max = 1 > f_min can never
   satisfy Theorem 1, so such candidates are skipped. Ties: a single row before a larger
   group;
   among single rows the lowest profile, then class 0 (no X_s value) before the X_s values
   in order, then the row whose QI rank is nearest to h's (the higher rank on equal
   distance; within one rank the first row in row order above h's rank, the last below);
   among larger groups the one whose smallest row index is lowest. A group whose N′_o is
   infinite, or which has no candidate, is left as it is ("unsatisfied").
3. Optional padding (``pad``): rows still alone without an X_s value, in (profile, rank,
   row) order, are cut into groups of ⌈r⌉ (the last group takes the remainder). Fewer than
   ⌈r⌉ such rows each join the group holding X_s values with the smallest
   Σ_{x ∈ Y(L)} D(L, {t}) for t (lowest smallest-row index on ties; groups the row would
   make infeasible as above are skipped, and a row with no such group stays alone), and
   step 2 runs again.

Closest-group search is indexed: candidates that are single rows are found by scanning the
*profiles* (not the rows), each with per-class availability counts, and the row inside a
(profile, class) is the nearest available QI rank, found by binary search plus
union–find "next available" pointers; only when no single row has D = 0 are the (few)
multi-row groups scanned. Cost per merge: O(profiles · (|A| + |X_s|)) + O(groups · |A|)
in the worst case, typically O(|A|) (a D = 0 profile is found first).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel

#: "infinite" required size
BIG = np.int64(1) << np.int64(62)
#: stopping conditions: Wong's Δ bound (Theorem 1 / inequality 5) or the exact posterior
DELTA = 0
EXACT = 1
#: relative slack of the exact condition (robustness.audit's default ``tol``)
EXACT_TOL = 1e-12


@kernel
def delta_ceil_value(N, r, f):
    """Δ_ceil(N, r, f) = (N − r) f (1 − f) / ((r − 1) f + (N − 1)(1 − f)); −(1 − f) at N = 1.

    The pole-free form of Theorem 1 (same arithmetic as :func:`fastpriv.robustness.delta_ceil`).
    """
    if N == 1:
        return -(1.0 - f)
    num = (N - r) * f * (1.0 - f)
    den = (r - 1.0) * f + (N - 1) * (1.0 - f)
    return num / den


@kernel
def required_size(d, r, f, n0):
    """Smallest N ≥ n0 with d ≤ Δ_ceil(N, r, f) (inequality 5); :data:`BIG` when none.

    Same rule as :func:`fastpriv.robustness.min_group_size` (``n0`` = max(2, ⌈r⌉)): the
    closed form (r f (1−f) + d (r−1) f − d (1−f)) / ((1−f)(f − d)) rounded up, then moved
    to the smallest N that passes the float test.
    """
    if f == 0.0 or f == 1.0:
        if d == 0.0:
            return n0
        return BIG
    if d >= f:
        return BIG
    bound = (r * f * (1.0 - f) + d * (r - 1.0) * f - d * (1.0 - f)) / ((1.0 - f) * (f - d))
    if not bound < 1e15:
        return BIG
    N = np.int64(math.ceil(bound))
    if N < n0:
        N = n0
    while N > n0 and d <= delta_ceil_value(N - 1, r, f):
        N -= 1
    while not d <= delta_ceil_value(N, r, f):
        N += 1
    return N


@kernel(helper=True)
def _find(parent, i):
    """Union–find root with path halving."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@kernel
def _alive(link, i):
    """Follow ``link`` from i to the nearest alive position (compressing the path).

    ``nxt`` links skip deleted positions forward (first alive ≥ i; n = none); ``prv``
    links skip backward, stored shifted by one (last alive ≤ i is ``_alive(prv, i + 1) - 1``;
    0 = none).
    """
    root = i
    while link[root] != root:
        root = link[root]
    while link[i] != root:
        j = link[i]
        link[i] = root
        i = j
    return root


@kernel(helper=True)
def group_required(F, row_prof, L, sL, gmin, gmax, x, r, n0):
    """Return the required size N′_o of group L for x (:data:`BIG`: none is reachable).

    L is a root; ``sL`` its slot, or −1 for a single row. :data:`BIG` when N′_o is
    infinite or larger than the table.
    """
    req = n0
    for a in range(F.shape[1]):
        if sL >= 0:
            fmn = gmin[sL, a, x]
            fmx = gmax[sL, a, x]
        else:
            fmn = F[row_prof[L], a, x]
            fmx = fmn
        q = required_size(fmx - fmn, r, fmx, n0)
        if q > req:
            req = q
    if req > row_prof.shape[0]:
        return BIG            # more rows than the table has: never reachable
    return req


@kernel
def infeasible(mn, mx, mode):
    """Tell whether a group with bounds (f_min, f_max) can never satisfy the condition.

    Δ mode: f_min = 0 < f_max (Δ = f_max) or f_max = 1 > f_min (Δ_ceil = 0 < Δ);
    exact mode: f_max = 1 (that tuple's odds are infinite).
    """
    if mode == EXACT:
        return mx == 1.0
    return (mn == 0.0 and mx > 0.0) or (mx == 1.0 and mn < 1.0)


@kernel
def odds(f):
    """Return the odds f / (1 − f) (+∞ at f = 1); binary model, x once: p_j = o_j / Σ o."""
    if f >= 1.0:
        return np.inf
    return f / (1.0 - f)


@kernel(helper=True)
def group_status(F, row_prof, L, sL, size_L, gmin, gmax, gsum, gomax, x, r, n0, mode):
    """Return (ok, stuck) of group L for x.

    Δ mode: N ≥ N′_o (stuck when N′_o is infinite); exact mode: r · max o ≤ Σ o (1 + 1e-12)
    for every attribute set, the exact binary posterior bound for a value occurring once
    (stuck when some f = 1).
    """
    if mode == DELTA:
        req = group_required(F, row_prof, L, sL, gmin, gmax, x, r, n0)
        return size_L >= req, req >= BIG
    ok = True
    for a in range(F.shape[1]):
        if sL >= 0:
            om = gomax[sL, a, x]
            os_ = gsum[sL, a, x]
        else:
            om = odds(F[row_prof[L], a, x])
            os_ = om
        if om == np.inf:
            return False, True
        if not r * om <= os_ * (1.0 + EXACT_TOL):
            ok = False
    return ok, False


@kernel(helper=True)
def _profile_candidate(F, cnt, ymL, lo, hi, x, self_p, self_c, mode, p):
    """(D, class) of profile p as a candidate (class −1: no eligible row / infeasible)."""
    n_cls = cnt.shape[1]
    ec = -1
    for c in range(n_cls):
        k = cnt[p, c]
        if p == self_p and c == self_c:
            k -= 1
        if k > 0 and (c == 0 or ymL[c - 1] == 0):
            ec = c
            break
    if ec < 0:
        return np.inf, -1
    dd = 0.0
    for a in range(F.shape[1]):
        v = F[p, a, x]
        mx = hi[a] if hi[a] > v else v
        mn = lo[a] if lo[a] < v else v
        if infeasible(mn, mx, mode):
            return np.inf, -1
        dd += (mx - mn) - (hi[a] - lo[a])
    return dd, ec


@kernel(helper=True)
def _dead(cnt, p):
    """Tell whether profile p has no single row left in any class."""
    for c in range(cnt.shape[1]):
        if cnt[p, c] > 0:
            return False
    return True


@kernel(helper=True)
def _kill(nxs, pvs, t):
    """Remove sorted position t from a (next, previous) skip structure."""
    nxs[t] = t + 1
    pvs[t + 1] = t


@kernel(helper=True)
def closest_profile(F, cnt, ymL, lo, hi, x, self_p, self_c, mode, sorder, svals, nxs, pvs):
    """Best single-row candidate by profile: ``(D, profile, class)``; profile −1 if none.

    Lowest D, then lowest profile index, then the first eligible class (0 first).
    Indexed by the sum of each profile's probabilities over the attribute sets,
    S_p = Σ_A f_A (``svals[x]`` sorted, ``sorder[x]`` the profiles in that order): since
    D = Σ_A dist(f_A, [f_min,A, f_max,A]) ≥ max(S_p − Σ f_max, Σ f_min − S_p, 0), profiles
    are visited by increasing lower bound from the slab Σ f_min ≤ S_p ≤ Σ f_max outwards,
    and the walk stops once the bound exceeds the best D found (exact: ties included).
    Profiles without any single row left are unlinked from x's order when met
    (``nxs[x]``/``pvs[x]``: next / previous live position skip lists, ``pvs`` shifted by one).
    """
    n_prof = F.shape[0]
    nA = F.shape[1]
    nx = nxs[x]
    pv = pvs[x]
    s_lo = 0.0
    s_hi = 0.0
    for a in range(nA):
        s_lo += lo[a]
        s_hi += hi[a]
    eps = 1e-12 * (1.0 + nA)
    # slab [i0, i1): svals within [s_lo, s_hi]
    a0 = 0
    b0 = n_prof
    while a0 < b0:
        mid = (a0 + b0) // 2
        if svals[x, mid] < s_lo:
            a0 = mid + 1
        else:
            b0 = mid
    i0 = a0
    a0 = i0
    b0 = n_prof
    while a0 < b0:
        mid = (a0 + b0) // 2
        if svals[x, mid] <= s_hi:
            a0 = mid + 1
        else:
            b0 = mid
    i1 = a0
    best_d = np.inf
    best_p = -1
    best_c = -1
    t = _alive(nx, i0)
    while t < i1:
        p = sorder[x, t]
        if _dead(cnt, p):
            _kill(nx, pv, t)
        else:
            dd, ec = _profile_candidate(F, cnt, ymL, lo, hi, x, self_p, self_c, mode, p)
            if ec >= 0 and (dd < best_d or (dd == best_d and p < best_p)):
                best_d = dd
                best_p = p
                best_c = ec
        t = _alive(nx, t + 1)
    left = _alive(pv, i0) - 1
    right = _alive(nx, i1)
    while left >= 0 or right < n_prof:
        bl = s_lo - svals[x, left] if left >= 0 else np.inf
        br = svals[x, right] - s_hi if right < n_prof else np.inf
        go_left = bl <= br
        bound = bl if go_left else br
        if bound - eps > best_d:
            break
        t = left if go_left else right
        if go_left:
            left = _alive(pv, left) - 1
        else:
            right = _alive(nx, right + 1)
        p = sorder[x, t]
        if _dead(cnt, p):
            _kill(nx, pv, t)
            continue
        dd, ec = _profile_candidate(F, cnt, ymL, lo, hi, x, self_p, self_c, mode, p)
        if ec >= 0 and (dd < best_d or (dd == best_d and p < best_p)):
            best_d = dd
            best_p = p
            best_c = ec
    return best_d, best_p, best_c


@kernel(helper=True)
def closest_group(gmin, gmax, ymask, slot_alive, slot_root, first_row, n_slots, sL, ymL,
                  lo, hi, x, bound, mode):
    """Best multi-row candidate with D < ``bound`` (ties: lowest smallest-row index); −1."""
    nA = gmin.shape[1]
    nX = gmin.shape[2]
    best_gd = bound
    best_s = -1
    best_first = -1
    for s2 in range(n_slots):
        if not slot_alive[s2] or s2 == sL:
            continue
        clash = False
        for y in range(nX):
            if ymask[s2, y] and ymL[y]:
                clash = True
                break
        if clash:
            continue
        dd = 0.0
        bad = False
        for a in range(nA):
            v2l = gmin[s2, a, x]
            v2h = gmax[s2, a, x]
            mx = hi[a] if hi[a] > v2h else v2h
            mn = lo[a] if lo[a] < v2l else v2l
            if infeasible(mn, mx, mode):
                bad = True
                break
            dd += (mx - mn) - (hi[a] - lo[a])
            if dd > best_gd:
                break
        if bad:
            continue
        fr = first_row[slot_root[s2]]
        # a larger group must beat the best single row strictly
        if dd < best_gd or (best_s >= 0 and dd == best_gd and fr < best_first):
            best_gd = dd
            best_s = s2
            best_first = fr
    return best_s


@kernel(helper=True)
def pick_row(rstart, srank, nxt, prv, sorted_rows, b, seed, self_pos):
    """Return the available row of range ``b`` (profile × class) nearest to rank ``seed``.

    Right side (rank ≥ seed: the first in sorted order) wins ties of distance; left side:
    the last in sorted order below ``seed``. ``self_pos`` (the seed group's own row) is
    skipped. Returns −1 when the range has no available row.
    """
    b0 = rstart[b]
    b1 = rstart[b + 1]
    lo_i = b0
    hi_i = b1
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        if srank[mid] < seed:
            lo_i = mid + 1
        else:
            hi_i = mid
    right = _alive(nxt, lo_i)
    if right == self_pos:
        right = _alive(nxt, right + 1)
    if right >= b1:
        right = -1
    left = _alive(prv, lo_i) - 1
    if left >= 0 and left == self_pos:
        left = _alive(prv, left) - 1
    if left < b0:
        left = -1
    if right < 0:
        pick = left
    elif left < 0:
        pick = right
    elif srank[right] - seed <= seed - srank[left]:
        pick = right
    else:
        pick = left
    if pick < 0:
        return -1
    return sorted_rows[pick]


@kernel(helper=True)
def _unindex(t, alive, nxt, prv, cnt, p, c):
    """Remove sorted position ``t`` (profile p, class c) from the single-row index."""
    if alive[t]:
        alive[t] = 0
        nxt[t] = t + 1
        prv[t + 1] = t
        cnt[p, c] -= 1


@kernel(helper=True)
def _slot_from_row(F, i, cls_i, sL, gmin, gmax, gsum, gomax, ymask):
    for a in range(F.shape[1]):
        for y in range(F.shape[2]):
            v = F[i, a, y]
            gmin[sL, a, y] = v
            gmax[sL, a, y] = v
            o = odds(v)
            gsum[sL, a, y] = o
            gomax[sL, a, y] = o
    for y in range(F.shape[2]):
        ymask[sL, y] = 1 if cls_i == y + 1 else 0


@kernel(helper=True)
def _absorb_row(F, p, cls_i, sL, gmin, gmax, gsum, gomax, ymask):
    for a in range(F.shape[1]):
        for y in range(F.shape[2]):
            v = F[p, a, y]
            if v < gmin[sL, a, y]:
                gmin[sL, a, y] = v
            if v > gmax[sL, a, y]:
                gmax[sL, a, y] = v
            o = odds(v)
            gsum[sL, a, y] += o
            if o > gomax[sL, a, y]:
                gomax[sL, a, y] = o
    if cls_i > 0:
        ymask[sL, cls_i - 1] = 1


@kernel(helper=True)
def _absorb_slot(sO, sL, gmin, gmax, gsum, gomax, ymask):
    for a in range(gmin.shape[1]):
        for y in range(gmin.shape[2]):
            if gmin[sO, a, y] < gmin[sL, a, y]:
                gmin[sL, a, y] = gmin[sO, a, y]
            if gmax[sO, a, y] > gmax[sL, a, y]:
                gmax[sL, a, y] = gmax[sO, a, y]
            gsum[sL, a, y] += gsum[sO, a, y]
            if gomax[sO, a, y] > gomax[sL, a, y]:
                gomax[sL, a, y] = gomax[sO, a, y]
    for y in range(gmin.shape[2]):
        if ymask[sO, y]:
            ymask[sL, y] = 1


@kernel(helper=True)
def _pad_join_target(F, p, gmin, gmax, ymask, slot_alive, slot_root, first_row, n_slots, n,
                     mode):
    """Return the slot of the group holding X_s values nearest to a row of profile p.

    Nearest: smallest Σ over its values of D; lowest smallest-row index on ties; groups the
    row would make infeasible are skipped; −1 when there is none.
    """
    nA = F.shape[1]
    nX = F.shape[2]
    best = np.inf
    bs = -1
    bfirst = n
    for s2 in range(n_slots):
        if not slot_alive[s2]:
            continue
        has_x = False
        bad = False
        dd = 0.0
        for y in range(nX):
            if ymask[s2, y]:
                has_x = True
                for a in range(nA):
                    v = F[p, a, y]
                    l2 = gmin[s2, a, y]
                    h2 = gmax[s2, a, y]
                    mx = h2 if h2 > v else v
                    mn = l2 if l2 < v else v
                    if infeasible(mn, mx, mode):
                        bad = True
                    dd += (mx - mn) - (h2 - l2)
        if not has_x or bad:
            continue
        fr = first_row[slot_root[s2]]
        if dd < best or (dd == best and fr < bfirst):
            best = dd
            bs = s2
            bfirst = fr
    return bs


@kernel(inline="always")
def _row_index(F, row_prof, row_cls, row_rank, sorted_rows):
    """Build the indexes :func:`art_merge` keeps over rows, X_s holders and profiles.

    Single rows sorted by (profile, class, rank, row) with ranges per (p, c) (``pos_of``,
    ``srank``, ``rstart``, ``cnt``, alive links ``nxt``/``prv``), the holders of each x in
    row order (``hstart``, ``holders``) and per x the profiles sorted by S_p = Σ_A f
    (``sorder``, ``svals``, links ``pnxt``/``pprv``; see :func:`closest_profile`).
    """
    n = row_prof.shape[0]
    n_prof = F.shape[0]
    nA = F.shape[1]
    nX = F.shape[2]
    n_cls = nX + 1
    # single-row index: rows sorted by (profile, class, rank, row), ranges per (p, c)
    pos_of = np.empty(n, dtype=np.int64)
    srank = np.empty(n, dtype=np.int64)
    for t in range(n):
        pos_of[sorted_rows[t]] = t
        srank[t] = row_rank[sorted_rows[t]]
    rstart = np.zeros(n_prof * n_cls + 1, dtype=np.int64)
    cnt = np.zeros((n_prof, n_cls), dtype=np.int64)
    for i in range(n):
        rstart[row_prof[i] * n_cls + row_cls[i] + 1] += 1
        cnt[row_prof[i], row_cls[i]] += 1
    for b in range(n_prof * n_cls):
        rstart[b + 1] += rstart[b]
    nxt = np.arange(n + 1).astype(np.int64)        # nxt[t] = t while alive; n = sentinel
    prv = np.arange(n + 1).astype(np.int64)        # shifted: prv[t+1] is position t; 0 = none
    alive = np.ones(n, dtype=np.uint8)
    # holders of each x, in row order
    hstart = np.zeros(nX + 1, dtype=np.int64)
    for i in range(n):
        if row_cls[i] > 0:
            hstart[row_cls[i]] += 1
    for x in range(nX):
        hstart[x + 1] += hstart[x]
    holders = np.empty(hstart[nX], dtype=np.int64)
    fill = hstart[:nX].copy()
    for i in range(n):
        c = row_cls[i]
        if c > 0:
            holders[fill[c - 1]] = i
            fill[c - 1] += 1
    # profile index per x: profiles sorted by S_p = Σ_A f (see closest_profile)
    svals = np.zeros((nX, n_prof), dtype=np.float64)
    sorder = np.empty((nX, n_prof), dtype=np.int64)
    for x in range(nX):
        tmp = np.zeros(n_prof, dtype=np.float64)
        for p in range(n_prof):
            acc = 0.0
            for a in range(nA):
                acc += F[p, a, x]
            tmp[p] = acc
        o = np.argsort(tmp, kind="mergesort")
        for t in range(n_prof):
            sorder[x, t] = o[t]
            svals[x, t] = tmp[o[t]]
    pnxt = np.empty((nX, n_prof + 1), dtype=np.int64)
    pprv = np.empty((nX, n_prof + 1), dtype=np.int64)
    for x in range(nX):
        for t in range(n_prof + 1):
            pnxt[x, t] = t
            pprv[x, t] = t
    return pos_of, srank, rstart, cnt, nxt, prv, alive, hstart, holders, svals, sorder, pnxt, pprv


@kernel(helper=True)
def _new_slots(cap, nA, nX):
    """Allocate ``cap`` group slots: (f_min, f_max, f_sum, f_omax, Y mask, root, alive)."""
    return (np.empty((cap, nA, nX), dtype=np.float64),
            np.empty((cap, nA, nX), dtype=np.float64),
            np.empty((cap, nA, nX), dtype=np.float64),
            np.empty((cap, nA, nX), dtype=np.float64),
            np.zeros((cap, nX), dtype=np.uint8),
            np.full(cap, -1, dtype=np.int64),
            np.zeros(cap, dtype=np.uint8))


@kernel(inline="always")
def _grow_slots(gmin, gmax, gsum, gomax, ymask, slot_root, slot_alive):
    """Double the capacity of the group slots (copies of every slot array)."""
    cap = gmin.shape[0]
    nA = gmin.shape[1]
    nX = gmin.shape[2]
    g2, g3, g4, g5, y2, r2, a2 = _new_slots(2 * cap, nA, nX)
    # element loops, not ``g2[:cap] = gmin``: an array-to-slice assignment makes Numba
    # compile its shape-mismatch error formatter (string code, ~0.3 CPU-s per array rank)
    for i in range(cap):
        for a in range(nA):
            for x in range(nX):
                g2[i, a, x] = gmin[i, a, x]
                g3[i, a, x] = gmax[i, a, x]
                g4[i, a, x] = gsum[i, a, x]
                g5[i, a, x] = gomax[i, a, x]
        for x in range(nX):
            y2[i, x] = ymask[i, x]
        r2[i] = slot_root[i]
        a2[i] = slot_alive[i]
    return g2, g3, g4, g5, y2, r2, a2


@kernel(inline="always")
def _pad_leftovers(F, row_prof, row_cls, sorted_rows, n0, mode, parent, size, first_row, alive,
                   gmin, gmax, gsum, gomax, ymask, slot_alive, slot_root, n_slots, pos_of, nxt,
                   prv, cnt):
    """Step 3 of ART: the rows left alone without an X_s value form or join groups.

    Returns ``(more, n_pad_groups, pad_joined)``: ``more`` is True when rows joined existing
    X_s groups (step 2 then runs again), False when merging is done.
    """
    n = row_prof.shape[0]
    nX = F.shape[2]
    n_pad_groups = 0
    pad_joined = 0
    m_left = 0
    for t in range(n):
        i = sorted_rows[t]
        if row_cls[i] == 0 and alive[t] and size[_find(parent, i)] == 1:
            m_left += 1
    if m_left == 0:
        return False, n_pad_groups, pad_joined
    left_rows = np.empty(m_left, dtype=np.int64)
    j = 0
    for t in range(n):
        i = sorted_rows[t]
        if row_cls[i] == 0 and alive[t] and size[_find(parent, i)] == 1:
            left_rows[j] = i
            j += 1
    n_chunks = m_left // n0
    if n_chunks >= 1:
        for c in range(n_chunks):
            a0 = c * n0
            a1 = (c + 1) * n0 if c < n_chunks - 1 else m_left
            root = left_rows[a0]
            for t2 in range(a0 + 1, a1):
                parent[left_rows[t2]] = root
            size[root] = a1 - a0
            n_pad_groups += 1
        return False, n_pad_groups, pad_joined          # no X_s group changed: done
    # fewer than ⌈r⌉ rows: each joins the closest group holding X_s values
    any_target = False
    for s2 in range(n_slots):
        if slot_alive[s2]:
            for y in range(nX):
                if ymask[s2, y]:
                    any_target = True
    if not any_target:
        # no group holds an X_s value: the leftovers form one group
        root = left_rows[0]
        for t2 in range(1, m_left):
            parent[left_rows[t2]] = root
        size[root] = m_left
        n_pad_groups += 1
        return False, n_pad_groups, pad_joined
    joined = False
    for t2 in range(m_left):
        i = left_rows[t2]
        bs = _pad_join_target(F, row_prof[i], gmin, gmax, ymask, slot_alive,
                              slot_root, first_row, n_slots, n, mode)
        if bs < 0:
            continue
        Lr = slot_root[bs]
        _absorb_row(F, row_prof[i], row_cls[i], bs, gmin, gmax, gsum, gomax, ymask)
        _unindex(pos_of[i], alive, nxt, prv, cnt, row_prof[i], row_cls[i])
        parent[i] = Lr
        size[Lr] += 1
        if i < first_row[Lr]:
            first_row[Lr] = i
        pad_joined += 1
        joined = True
    return joined, n_pad_groups, pad_joined


@kernel(inline="always")
def _unsatisfied(F, row_prof, parent, size, slot_of, gmin, gmax, gsum, gomax, hstart, holders, r,
                 n0, mode):
    """``(root, unsat)``: every row's group root; per X_s holder whether its group fails."""
    n = row_prof.shape[0]
    nX = F.shape[2]
    # ---------------------------------------------------------------- results
    root = np.empty(n, dtype=np.int64)
    for i in range(n):
        root[i] = _find(parent, i)
    unsat = np.full(n, -1, dtype=np.int8)
    for x in range(nX):
        for hh in range(hstart[x], hstart[x + 1]):
            h = holders[hh]
            L = root[h]
            ok, stuck = group_status(F, row_prof, L, slot_of[L], size[L], gmin, gmax, gsum,
                                     gomax, np.int64(x), r, n0, mode)
            unsat[h] = 0 if ok else 1
    return root, unsat


@kernel(helper=True)
def _group_bounds(F, row_prof, row_cls, L, sL, x, gmin, gmax, ymask, lo, hi, ymL):
    """Fill ``lo``/``hi`` (f range per attribute set for x) and ``ymL`` (X_s values) of L."""
    nA = F.shape[1]
    nX = F.shape[2]
    for a in range(nA):
        if sL >= 0:
            lo[a] = gmin[sL, a, x]
            hi[a] = gmax[sL, a, x]
        else:
            lo[a] = F[row_prof[L], a, x]
            hi[a] = lo[a]
    for y in range(nX):
        if sL >= 0:
            ymL[y] = ymask[sL, y]
        else:
            ymL[y] = 1 if row_cls[L] == y + 1 else 0


@kernel(helper=True)
def _union(parent, size, first_row, slot_of, slot_root, L, other, sL):
    """Join the groups of roots L and ``other`` (union by size); the result owns slot sL."""
    if size[other] > size[L]:
        newr = other
        oldr = L
    else:
        newr = L
        oldr = other
    parent[oldr] = newr
    size[newr] = size[L] + size[other]
    first_row[newr] = min(first_row[L], first_row[other])
    slot_of[oldr] = -1
    slot_of[newr] = sL
    slot_root[sL] = newr


@kernel
def art_merge(F, row_prof, row_cls, row_rank, sorted_rows, r, pad, mode):
    """Run ART's merging (module docstring) on prepared rows.

    Returns ``(root, n_merges, n_passes, unsatisfied, n_pad_groups, pad_joined)``: the
    group representative of every row (a row index), the number of merges, the passes of
    step 2 (both runs), per row holding an X_s value whether its group fails the Δ condition
    for that value at the end (1) or not (0; −1 for the other rows), the number of groups
    padding created and the number of rows padding added to existing groups.
    """
    n = row_prof.shape[0]
    nA = F.shape[1]
    nX = F.shape[2]
    n_cls = nX + 1
    n0 = np.int64(math.ceil(r))
    if n0 < 2:
        n0 = np.int64(2)
    # groups: union-find over rows; multi-row groups own a slot of (f_min, f_max, Y)
    parent = np.arange(n).astype(np.int64)
    size = np.ones(n, dtype=np.int64)
    slot_of = np.full(n, -1, dtype=np.int64)
    first_row = np.arange(n).astype(np.int64)
    cap = np.int64(64)
    gmin, gmax, gsum, gomax, ymask, slot_root, slot_alive = _new_slots(cap, nA, nX)
    n_slots = np.int64(0)
    # single-row index, X_s holders, per-x profile order (see _row_index)
    (pos_of, srank, rstart, cnt, nxt, prv, alive, hstart, holders, svals, sorder, pnxt,
     pprv) = _row_index(F, row_prof, row_cls, row_rank, sorted_rows)
    lo = np.empty(nA, dtype=np.float64)
    hi = np.empty(nA, dtype=np.float64)
    ymL = np.zeros(nX, dtype=np.uint8)
    n_merges = 0
    n_passes = 0
    n_pad_groups = 0
    pad_joined = 0
    runs = 2 if pad else 1
    for run in range(runs):
        changed = True
        while changed:
            changed = False
            n_passes += 1
            for x in range(nX):
                for hh in range(hstart[x], hstart[x + 1]):
                    h = holders[hh]
                    while True:
                        L = _find(parent, h)
                        sL = slot_of[L]
                        ok, stuck = group_status(F, row_prof, L, sL, size[L], gmin, gmax,
                                                 gsum, gomax, x, r, n0, mode)
                        if ok or stuck:
                            break
                        _group_bounds(F, row_prof, row_cls, L, sL, x, gmin, gmax, ymask, lo, hi,
                                      ymL)
                        self_pos = -1
                        self_p = -1
                        self_c = -1
                        if sL < 0:
                            self_pos = pos_of[L]
                            self_p = row_prof[L]
                            self_c = row_cls[L]
                        best_d, best_p, best_c = closest_profile(F, cnt, ymL, lo, hi, x,
                                                                 self_p, self_c, mode, sorder,
                                                                 svals, pnxt, pprv)
                        best_s = -1
                        if best_d > 0.0:
                            best_s = closest_group(gmin, gmax, ymask, slot_alive, slot_root,
                                                   first_row, n_slots, sL, ymL, lo, hi, x,
                                                   best_d, mode)
                        if best_s < 0 and best_p < 0:
                            break                      # no candidate at all
                        if best_s >= 0:
                            other = slot_root[best_s]
                        else:
                            other = pick_row(rstart, srank, nxt, prv, sorted_rows,
                                             best_p * n_cls + best_c, row_rank[h], self_pos)
                        # ---- merge other into L
                        if sL < 0:
                            if n_slots == cap:
                                gmin, gmax, gsum, gomax, ymask, slot_root, slot_alive = \
                                    _grow_slots(gmin, gmax, gsum, gomax, ymask, slot_root,
                                                slot_alive)
                                cap = 2 * cap
                            sL = n_slots
                            n_slots += 1
                            _slot_from_row(F, row_prof[L], row_cls[L], sL, gmin, gmax, gsum, gomax,
                                           ymask)
                            slot_alive[sL] = 1
                            _unindex(pos_of[L], alive, nxt, prv, cnt, row_prof[L], row_cls[L])
                        sO = slot_of[other]
                        if sO >= 0:
                            _absorb_slot(sO, sL, gmin, gmax, gsum, gomax, ymask)
                            slot_alive[sO] = 0
                        else:
                            _absorb_row(F, row_prof[other], row_cls[other], sL, gmin, gmax,
                                        gsum, gomax, ymask)
                            _unindex(pos_of[other], alive, nxt, prv, cnt, row_prof[other],
                                     row_cls[other])
                        _union(parent, size, first_row, slot_of, slot_root, L, other, sL)
                        n_merges += 1
                        changed = True
        if run == 0 and pad:
            more, n_pad, n_joined = _pad_leftovers(
                F, row_prof, row_cls, sorted_rows, n0, mode, parent, size, first_row, alive,
                gmin, gmax, gsum, gomax, ymask, slot_alive, slot_root, n_slots, pos_of, nxt,
                prv, cnt)
            n_pad_groups += n_pad
            pad_joined += n_joined
            if not more:
                break
    root, unsat = _unsatisfied(F, row_prof, parent, size, slot_of, gmin, gmax, gsum, gomax,
                               hstart, holders, r, n0, mode)
    return root, n_merges, n_passes, unsat, n_pad_groups, pad_joined
