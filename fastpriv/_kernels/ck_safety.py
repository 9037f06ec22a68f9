"""Kernels for (c,k)-safety (Martin et al., ICDE 2007; spec ``ck_safety.md``).

Notation. A bucket (group) b has n people and value counts c_0 ≥ c_1 ≥ … (zero-padded);
``pref[m] = c_0 + … + c_{m-1}``. Person i (0-based) given m atoms "p_i has s^0 … s^{m-1}"
contributes the factor f(i, m) = max(0, n − i − pref[m]) / (n − i) (Lemma 12), and

    M1(b, h) = min over partitions h = λ_0 ≥ λ_1 ≥ … ≥ λ_{l-1} ≥ 1, l ≤ n, of ∏_i f(i, λ_i)
    R*(k)    = min over the A-bucket j and h_0 + … + h_{|B|-1} = k of
               (n_j / c_0(j)) · M1(b_j, h_j + 1) · ∏_{i≠j} M1(b_i, h_i)

(the corrected MINIMIZE2 of the spec). Max disclosure = 1 / (1 + R*).

Two independent implementations exist:

* the **reference** (``reference_min_ratio`` in ``tests/kernels_reference.py``, kept out
  of the package because only the tests and benchmarks run it): the paper's MINIMIZE1 recursion
  M(i, k̂_i, k̂) = min_{k_i ≤ min(k̂_i, k̂)} f(i, k_i) · M(i+1, k_i, k̂ − k_i) tabulated per
  bucket (no sharing between buckets), followed by the straightforward O(|B|·k²) knapsack
  over every bucket. It is what the fast path is tested and benchmarked against.
* the **fast path** (here): frequency profiles are de-duplicated by (n, top-(k+1) counts) with a
  hash table (:func:`dedupe_profiles`); cheap upper/lower bounds discard the profiles that
  provably cannot be among the k+1 best buckets for any h (:func:`prune_profiles`); M1 is
  computed for the rest with an O(k³) DP whose every state costs O(1) (:func:`m1_profiles`);
  only the k − h + 2 best buckets per h (k − h + 1 for the role of A) are kept
  (:func:`select_candidates`) and a small knapsack with back-pointers runs on them
  (:func:`knapsack_candidates`).

All probabilities are float64 products of at most 2k + 2 ratios of integers.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel

_INF = np.inf


# --------------------------------------------------------------------------- profiles
@kernel(helper=True)
def _profile_hash(indptr, counts, sizes, g, H):
    prime = np.uint64(0x100000001B3)
    hv = (np.uint64(0xCBF29CE484222325) ^ np.uint64(sizes[g])) * prime
    a, b = indptr[g], indptr[g + 1]
    for j in range(H):
        c = counts[a + j] if a + j < b else 0
        hv = (hv ^ np.uint64(c)) * prime
    # splitmix64 finaliser: the table uses the low bits
    hv ^= hv >> np.uint64(30)
    hv *= np.uint64(0xBF58476D1CE4E5B9)
    hv ^= hv >> np.uint64(27)
    hv *= np.uint64(0x94D049BB133111EB)
    return hv ^ (hv >> np.uint64(31))


@kernel(helper=True)
def _filled1(n, value):
    out = np.empty(n)
    for i in range(n):
        out[i] = value
    return out


@kernel(helper=True)
def _filled1_int(n, value):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = value
    return out


@kernel(helper=True)
def _filled2(rows, cols, value):
    out = np.empty((rows, cols))
    for i in range(rows):
        for j in range(cols):
            out[i, j] = value
    return out


@kernel(helper=True)
def _filled2_int(rows, cols, value):
    out = np.empty((rows, cols), dtype=np.int64)
    for i in range(rows):
        for j in range(cols):
            out[i, j] = value
    return out


@kernel
def dedupe_profiles(indptr, counts, sizes, H):
    """Group ids by distinct profile key (n_g, c_0 … c_{H-1}) with an open-addressing table.

    Returns ``(profile_of_group, keys, mult)``: ``keys[p] = [n, c_0, …, c_{H-1}]``
    (zero-padded) and ``mult[p]`` the number of groups with that profile. Profiles are
    numbered in order of first appearance. One pass, O(G·H). The table grows with the
    number of *distinct* profiles (load ≤ 1/2), so it stays cache-resident when profiles
    repeat, and stores each entry's 64-bit hash so keys are compared only on a hash match.
    """
    G = sizes.shape[0]
    W = H + 1
    cap = 1024
    mask = np.uint64(cap - 1)
    table = np.empty(cap, dtype=np.int64)
    table.fill(-1)
    thash = np.zeros(cap, dtype=np.uint64)
    prof = np.empty(G, dtype=np.int64)
    kcap = 512
    keys = np.zeros(kcap * W, dtype=np.int64)      # row-major (kcap, W), grown by doubling
    mult = np.zeros(kcap, dtype=np.int64)
    phash = np.zeros(kcap, dtype=np.uint64)
    P = 0
    for g in range(G):
        hv = _profile_hash(indptr, counts, sizes, g, H)
        slot = hv & mask
        a, b = indptr[g], indptr[g + 1]
        while True:
            pid = table[slot]
            if pid < 0:
                if P == kcap:
                    kcap *= 2
                    nk = np.zeros(kcap * W, dtype=np.int64)
                    nm = np.zeros(kcap, dtype=np.int64)
                    nh = np.zeros(kcap, dtype=np.uint64)
                    for q in range(P):
                        nm[q] = mult[q]
                        nh[q] = phash[q]
                        for j in range(W):
                            nk[q * W + j] = keys[q * W + j]
                    keys, mult, phash = nk, nm, nh
                keys[P * W] = sizes[g]
                for j in range(H):
                    keys[P * W + j + 1] = counts[a + j] if a + j < b else 0
                mult[P] = 1
                phash[P] = hv
                prof[g] = P
                P += 1
                if 2 * P > cap:  # grow and rehash every profile
                    cap *= 2
                    mask = np.uint64(cap - 1)
                    table = np.empty(cap, dtype=np.int64)
                    table.fill(-1)
                    thash = np.zeros(cap, dtype=np.uint64)
                    for q in range(P):
                        s2 = phash[q] & mask
                        while table[s2] >= 0:
                            s2 = (s2 + np.uint64(1)) & mask
                        table[s2] = q
                        thash[s2] = phash[q]
                else:
                    table[slot] = P - 1
                    thash[slot] = hv
                break
            if thash[slot] == hv:
                base = pid * W
                same = keys[base] == sizes[g]
                j = 0
                while same and j < H:
                    c = counts[a + j] if a + j < b else 0
                    same = keys[base + j + 1] == c
                    j += 1
                if same:
                    mult[pid] += 1
                    prof[g] = pid
                    break
            slot = (slot + np.uint64(1)) & mask
    out_keys = np.empty((P, W), dtype=np.int64)
    out_mult = np.empty(P, dtype=np.int64)
    for q in range(P):
        out_mult[q] = mult[q]
        for j in range(W):
            out_keys[q, j] = keys[q * W + j]
    return prof, out_keys, out_mult


# --------------------------------------------------------------------------- MINIMIZE1
#: Profiles processed together by the M1 kernel (the innermost loop runs over them, so
#: LLVM vectorises the DP across profiles).
LANES = 16


@kernel(helper=True)
def _m1_block(keys, rows, lo, cnt, H, pref, nn, fi, prev, cur, best, out):
    """Fast M1(h), h = 0..H, for profiles rows[lo:lo+cnt] (≤ LANES), lanes innermost.

    B_i(m, r) = min over non-increasing parts ≤ m summing to r for persons i, i+1, … of
    ∏ f = min(B_i(m−1, r), f(i, m) · B_{i+1}(min(m, r−m), r−m)), B_i(·, 0) = 1 and
    M1(h) = B_0(h, h): O(1) per state, O(H³) per profile. A person i ≥ n gets f = 0: any
    structure reaching her passes person n−1, whose factor f(n−1, m) = max(0, 1 − pref[m])
    is already 0, and the zero is achievable with fewer atoms (M1 is non-increasing in h),
    so no +inf (and no 0·inf) is needed.
    """
    W = H + 1
    for ln in range(LANES):
        p = rows[lo + ln] if ln < cnt else rows[lo]
        nn[ln] = keys[p, 0]
        pref[0, ln] = 0
        for m in range(1, W):
            pref[m, ln] = pref[m - 1, ln] + keys[p, m]
    for x in range(W * W):
        for ln in range(LANES):
            prev[x, ln] = 0.0
    for m in range(W):
        for ln in range(LANES):
            prev[m * W, ln] = 1.0
            cur[m * W, ln] = 1.0
    for i in range(H - 1, -1, -1):
        for m in range(1, W):
            for ln in range(LANES):
                ni = nn[ln] - i
                num = ni - pref[m, ln]
                fi[m, ln] = num / ni if num > 0 else 0.0
        for r in range(1, H - i + 1):
            for ln in range(LANES):
                best[ln] = 2.0
            for m in range(1, r + 1):
                rem = r - m
                mm = m if m < rem else rem
                src = mm * W + rem
                dst = m * W + r
                for ln in range(LANES):
                    c = fi[m, ln] * prev[src, ln]
                    bb = best[ln]
                    bb = c if c < bb else bb
                    best[ln] = bb
                    cur[dst, ln] = bb
        prev, cur = cur, prev
    for ln in range(cnt):
        q = lo + ln
        out[q, 0] = 1.0
        for h in range(1, W):
            out[q, h] = prev[h * W + h, ln]


@kernel
def m1_profiles(keys, rows, H):
    """M1(p, h) for h = 0..H for the profiles ``rows`` of ``keys`` → float64 (len(rows), H+1).

    Serial and ``nogil``: the API splits large inputs over a thread pool (no ``parallel=True``
    compile cost, no parallel-region launch for small inputs).
    """
    Q = rows.shape[0]
    out = np.empty((Q, H + 1))
    W = H + 1
    pref = np.zeros((W, LANES), dtype=np.int64)
    nn = np.zeros(LANES, dtype=np.int64)
    fi = np.zeros((W, LANES))
    prev = np.empty((W * W, LANES))
    cur = np.empty((W * W, LANES))
    best = np.empty(LANES)
    for lo in range(0, Q, LANES):
        cnt = min(LANES, Q - lo)
        _m1_block(keys, rows, lo, cnt, H, pref, nn, fi, prev, cur, best, out)
    return out


# --------------------------------------------------------------------------- pruning
@kernel(helper=True)
def _insert(vals, owners, row, size, cap, val, p, q):
    """Insert ``q`` copies of (val, p) into the sorted row ``row`` (capacity ``cap``)."""
    for _ in range(q):
        if size == cap and not (val < vals[row, cap - 1]):
            return size
        pos = size if size < cap else cap - 1
        while pos > 0 and val < vals[row, pos - 1]:
            if pos < cap:
                vals[row, pos] = vals[row, pos - 1]
                owners[row, pos] = owners[row, pos - 1]
            pos -= 1
        vals[row, pos] = val
        owners[row, pos] = p
        if size < cap:
            size += 1
    return size


@kernel(helper=True)
def _role_caps(K):
    """Capacities of the 2K+1 selection lists.

    Rows 0..K are the A role for h = 0..K (K − h + 1 buckets), rows K+1..2K the plain role
    for h = 1..K (K − h + 2 buckets).
    """
    caps = np.empty(2 * K + 1, dtype=np.int64)
    for h in range(K + 1):
        caps[h] = K - h + 1
    for h in range(1, K + 1):
        caps[K + h] = K - h + 2
    return caps


@kernel(helper=True)
def _role_lists(K):
    """Empty top lists of the 2K + 1 roles: ``(caps, vals, owners, sizes)``."""
    nrows = 2 * K + 1
    cmax = K + 1
    return (_role_caps(K), _filled2(nrows, cmax, _INF), _filled2_int(nrows, cmax, -1),
            np.zeros(nrows, dtype=np.int64))


@kernel
def prune_profiles(keys, mult, K):
    """Mark the profiles that may be among the best buckets of some role (1) or not (0).

    Upper bound UB(h) = min(one person holds all h atoms, h people each "not s^0") — both
    are Lemma 12 structures, so UB ≥ M1. Lower bound, for a partition λ of h: person 0 has
    λ_0 ≤ h atoms, every other person i ≤ imax = min(H, n) − 1 has λ_i ≤ ⌊h/2⌋ atoms and
    f(i, m) ≥ f(imax, m), so with q0(m) = log f(0, m)/m and q1(m) = log f(imax, m)/m,
    log ∏ f ≥ h · min(min_{m ≤ h} q0(m), min_{m ≤ ⌊h/2⌋} q1(m)) =: log LB(h). With thr the
    cap-th smallest UB of a role (copies counted), a profile whose LB ≥ thr can always be
    swapped for one of the cap buckets achieving UB ≤ thr; only profiles with LB < thr (a
    1e-9 relative safety margin absorbs rounding) or inside a top-cap list are kept.
    """
    H = K + 1
    P = keys.shape[0]
    caps, vals, owners, sizes = _role_lists(K)
    nrows = 2 * K + 1
    ub = np.empty(H + 1)
    for p in range(P):
        n = keys[p, 0]
        c0 = keys[p, 1]
        ratio = n / c0
        pref = 0
        spread = 1.0
        for h in range(1, H + 1):
            pref += keys[p, h]
            num = n - pref
            single = num / n if num > 0 else 0.0
            i = h - 1
            if i < n:
                num2 = n - i - c0
                spread = spread * (num2 / (n - i)) if num2 > 0 else 0.0
            else:
                spread = _INF
            ub[h] = single if single < spread else spread
        for r in range(nrows):
            cap = caps[r]
            val = ratio * ub[r + 1] if r <= K else ub[r - K]
            if sizes[r] == cap and not (val < vals[r, cap - 1]):
                continue
            q = mult[p] if mult[p] < cap else cap
            sizes[r] = _insert(vals, owners, r, sizes[r], cap, val, p, q)
    thr_log = np.empty(nrows)
    for r in range(nrows):
        if sizes[r] < caps[r]:
            thr_log[r] = _INF
        else:
            t = vals[r, caps[r] - 1]
            thr_log[r] = math.log(t) if t > 0 else -_INF
    keep = np.zeros(P, dtype=np.uint8)
    for r in range(nrows):
        for j in range(sizes[r]):
            keep[owners[r, j]] = 1
    margin = 1e-9
    Q0 = np.empty(H + 1)
    Q1 = np.empty(H + 1)
    for p in range(P):
        if keep[p]:
            continue
        n = keys[p, 0]
        c0 = keys[p, 1]
        imax = (H if H < n else n) - 1
        pref = 0
        for m in range(1, H + 1):
            pref += keys[p, m]
            num = n - pref
            q = math.log(num / n) / m if num > 0 else -_INF
            Q0[m] = q if (m == 1 or q < Q0[m - 1]) else Q0[m - 1]
        pref = 0
        if imax >= 1:
            ni = n - imax
            for m in range(1, H // 2 + 1):
                pref += keys[p, m]
                num = ni - pref
                q = math.log(num / ni) / m if num > 0 else -_INF
                Q1[m] = q if (m == 1 or q < Q1[m - 1]) else Q1[m - 1]
        lratio = math.log(n / c0)
        for r in range(nrows):
            h = r + 1 if r <= K else r - K
            per = Q0[h]
            if h >= 2 and imax >= 1 and Q1[h // 2] < per:
                per = Q1[h // 2]
            lb = h * per
            if r <= K:
                lb += lratio
            if lb - margin < thr_log[r]:
                keep[p] = 1
                break
    return keep


@kernel
def select_candidates(u, keys, rows, mult, K, slack):
    """How many buckets of each profile the final knapsack needs (0 = none).

    ``u[q]`` = M1 of profile ``rows[q]`` for h = 0..K+1. For the A role at h the K − h + 1
    smallest (n/c_0)·M1(h+1) are kept, for the plain role at h ≥ 1 the K − h + 2 smallest
    M1(h) (copies of a profile counted up to its multiplicity): any other bucket used in a
    solution can be swapped for an unused kept one without increasing the product. With
    ``slack > 0`` every profile within a relative ``slack`` of a list's last value is kept
    too (exact mode: floats may misorder near-ties).
    """
    Q = rows.shape[0]
    caps, vals, owners, sizes = _role_lists(K)
    nrows = 2 * K + 1
    for q in range(Q):
        p = rows[q]
        ratio = keys[p, 0] / keys[p, 1]
        m = mult[p]
        for r in range(nrows):
            cap = caps[r]
            val = ratio * u[q, r + 1] if r <= K else u[q, r - K]
            sizes[r] = _insert(vals, owners, r, sizes[r], cap, val, q, m if m < cap else cap)
    copies = np.zeros(Q, dtype=np.int64)
    tmp = np.zeros(Q, dtype=np.int64)
    for r in range(nrows):
        for j in range(sizes[r]):
            tmp[owners[r, j]] += 1
        for j in range(sizes[r]):
            o = owners[r, j]
            if tmp[o] > copies[o]:
                copies[o] = tmp[o]
            tmp[o] = 0
    if slack > 0.0:
        for r in range(nrows):
            cap = caps[r]
            if sizes[r] < cap:
                continue
            lim = vals[r, cap - 1] * (1.0 + slack) + 1e-300
            for q in range(Q):
                p = rows[q]
                val = keys[p, 0] / keys[p, 1] * u[q, r + 1] if r <= K else u[q, r - K]
                if val <= lim:
                    m = mult[p] if mult[p] < cap else cap
                    if m > copies[q]:
                        copies[q] = m
    return copies


# --------------------------------------------------------------------------- knapsack
@kernel
def knapsack_candidates(u, ratio, K):
    """Exact-t knapsack over the C candidate buckets, with back-pointers.

    ``u`` (C, K+2) = M1(h), ``ratio`` (C,) = n/c_0. Returns ``(V, hu, hv, av)``: V[t] = R*(t)
    and, for bucket j and budget t after processing buckets 0..j, the h chosen in the U
    table (``hu``), in the V table (``hv``) and whether bucket j holds A there (``av``).
    """
    C = u.shape[0]
    U = _filled1(K + 1, _INF)
    V = _filled1(K + 1, _INF)
    U[0] = 1.0
    hu = np.zeros((C, K + 1), dtype=np.int64)
    hv = np.zeros((C, K + 1), dtype=np.int64)
    av = np.zeros((C, K + 1), dtype=np.uint8)
    for j in range(C):
        rj = ratio[j]
        for t in range(K, -1, -1):
            nu = _INF
            nv = _INF
            bu = 0
            bv = 0
            ba = 0
            for h in range(t + 1):
                x = U[t - h]
                if x < _INF:
                    c = x * u[j, h]
                    if c < nu:
                        nu = c
                        bu = h
                    c = x * (rj * u[j, h + 1])
                    if c < nv:
                        nv = c
                        bv = h
                        ba = 1
                y = V[t - h]
                if y < _INF:
                    c = y * u[j, h]
                    if c < nv:
                        nv = c
                        bv = h
                        ba = 0
            U[t] = nu
            V[t] = nv
            hu[j, t] = bu
            hv[j, t] = bv
            av[j, t] = ba
    return V, hu, hv, av


# --------------------------------------------------------------------------- negations
@kernel
def negation_curve(indptr, counts, sizes, K):
    """max_b c_0 / (n − c_1 − … − c_k) for k = 0..K, with the arg-max group.

    Returns ``(num, den, group)`` per k; the maximum is decided exactly by cross-multiplying
    int64 (all n < 2**31) — ties go to the first group.
    """
    G = sizes.shape[0]
    num = np.zeros(K + 1, dtype=np.int64)
    den = np.ones(K + 1, dtype=np.int64)
    grp = _filled1_int(K + 1, -1)
    for g in range(G):
        a, b = indptr[g], indptr[g + 1]
        n = sizes[g]
        c0 = counts[a]
        rest = 0
        for k in range(K + 1):
            if k >= 1:
                j = a + k
                if j < b:
                    rest += counts[j]
            d = n - rest
            if grp[k] < 0 or c0 * den[k] > num[k] * d:
                num[k] = c0
                den[k] = d
                grp[k] = g
    return num, den, grp
