"""SkylineAnonymize kernels (Chen, LeFevre, Ramakrishnan, VLDB 2007, Section 5.2, Figure 6).

Top-down greedy partitioning on encoded *cells* — distinct (QI codes, sensitive code)
combinations with a weight, i.e. the (QI value, sensitive value, count) triples of the
paper's scalability note — keeping the five global sufficient statistics of every
(σ, skyline point) pair. The split rule (attribute order, weighted lower-median cut, stable
left/right reorder of the cells) is Mondrian's, imported from :mod:`.mondrian`; the
per-group T and V terms are the privacy-skyline helpers of :mod:`.skyline`, so a group
evaluated here gets bit-for-bit the terms :func:`fastpriv.skyline.check` computes for it.

Arrays
------
``q`` (d × cells, int32) QI codes; ``s`` (cells, int32) sensitive codes; ``w`` (cells, int64)
value occurrences; ``iw`` (cells, int64) individuals (SVPI: ``iw = w``; MVPI: each
individual is counted on one cell of its QI tuple). Pairs ``p``: ``pt_sig/pt_l/pt_k/pt_m``
(int64), threshold ``thr`` (float64) and ``strict`` (uint8): the pair is safe iff
minNR > thr (strict) or minNR ≥ thr (not strict) — the caller chooses thr/strict so this
equals "Fraction(minNR) > (1 − c)/c", the float-mode decision of
:func:`fastpriv.skyline.check`.

Figure 6 with its typo fixed (spec skyline.md): a split of g into g1, g2 is accepted iff,
for every pair, the combination (Theorem 2) of A_j = min(SS_j, term_j(g1), term_j(g2)) —
with SS5's update reading SS5, not SS4 — is safe; then SS_j ← A_j. The statistics are over
every group seen so far (a superset of the current partition), so in floats the decision is
never less conservative than a check of the current partition (min over a superset, and
IEEE multiplication is monotone).
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .mondrian import attribute_order, close_group, median_cut, split_in_place
from .skyline import INF, SET, combine, mul, t_value, v_value


@kernel(helper=True)
def profile_terms(hist, n, case, pt_sig, pt_l, pt_k, pt_m):
    """Return the five per-group terms of every pair for one group.

    ``hist`` is the group's dense histogram of value occurrences (int64, one slot per
    sensitive code), ``n`` its number of individuals. Row ``p`` of the result is
    (minNR(ℓ,k,m) = T(ℓ,k)·V(m,k+1), T(ℓ,0), T(ℓ,k), V(m,0), V(m,k)) for pair p; the
    neutral row (∞, ∞, ∞, 1, 1) when σ_p does not occur in the group (C1). The profile is
    sorted like a Release's (count descending, ties by code) so S_ℓ and P_ℓ are the sums /
    products :func:`fastpriv.skyline.check` uses.
    """
    n_codes = hist.shape[0]
    n_pts = pt_sig.shape[0]
    out = np.empty((n_pts, 5), dtype=np.float64)
    d = 0
    for v in range(n_codes):
        if hist[v] > 0:
            d += 1
    codes = np.empty(d, dtype=np.int64)
    counts = np.empty(d, dtype=np.int64)
    e = 0
    for v in range(n_codes):
        if hist[v] > 0:
            codes[e] = v
            counts[e] = hist[v]
            e += 1
    # insertion sort by count descending; codes ascending already, so ties stay by code
    for x in range(1, d):
        cv = codes[x]
        cc = counts[x]
        p = x
        while p > 0 and counts[p - 1] < cc:
            codes[p] = codes[p - 1]
            counts[p] = counts[p - 1]
            p -= 1
        codes[p] = cv
        counts[p] = cc
    rank = np.full(n_codes, -1, dtype=np.int64)
    for x in range(d):
        rank[codes[x]] = x
    l_max = 0
    for p in range(n_pts):
        if pt_l[p] > l_max:
            l_max = pt_l[p]
    lim = d if d < l_max + 1 else l_max + 1
    pre = np.zeros(lim + 1, dtype=np.int64)
    for j in range(lim):
        pre[j + 1] = pre[j] + counts[j]
    for p in range(n_pts):
        r = rank[pt_sig[p]]
        if r < 0:
            out[p, 0] = INF
            out[p, 1] = INF
            out[p, 2] = INF
            out[p, 3] = 1.0
            out[p, 4] = 1.0
            continue
        s = counts[r]
        l = pt_l[p]
        k = pt_k[p]
        m = pt_m[p]
        ll = l if l < d - 1 else d - 1
        if r >= ll:
            big_s = pre[ll]
        else:
            big_s = pre[ll + 1] - s
        pl = 1.0
        if case == SET:
            # P_ℓ exactly as skyline.top_prod (same factors, same order); top_prod itself
            # is not called because a kernel-local array would compile it a second time
            lim_p = l if l < d - 1 else d - 1
            taken = 0
            e = 0
            while taken < lim_p:
                if e != r:
                    pl = mul(pl, (n - counts[e]) / n)
                    taken += 1
                e += 1
        t0 = t_value(n, s, big_s, np.int64(0), case, pl)
        tk = t_value(n, s, big_s, k, case, pl)
        vk1 = v_value(n, s, m, k + 1, case)
        out[p, 0] = mul(tk, vk1)
        out[p, 1] = t0
        out[p, 2] = tk
        out[p, 3] = v_value(n, s, m, np.int64(0), case)
        out[p, 4] = v_value(n, s, m, k, case)
    return out


@kernel
def pairs_safe(stats, thr, strict):
    """1 if the combination (Theorem 2) of ``stats`` (pairs × 5) is safe for every pair."""
    for p in range(stats.shape[0]):
        nr, which = combine(stats[p, 0], stats[p, 1], stats[p, 2], stats[p, 3], stats[p, 4])
        if strict[p]:
            if not nr > thr[p]:
                return False
        elif not nr >= thr[p]:
            return False
    return True


@kernel
def split_candidate(q, s, w, iw, perm, a, b, j, cut, n_values, case, pt_sig, pt_l, pt_k,
                    pt_m, stats, thr, strict):
    """Evaluate the split of cells ``perm[a:b]`` at ``q[j] <= cut`` (left) / ``> cut``.

    Returns ``(ok, merged)``: ``ok`` is True iff BP from (global ∧ children) statistics is
    below c for every pair (Figure 6's safeSplit, typo fixed); ``merged`` is the (pairs × 5)
    statistics after the split (elementwise min of ``stats`` and both children's terms).
    Either child being empty makes the candidate invalid (``ok`` False).
    """
    hl = np.zeros(n_values, dtype=np.int64)
    hr = np.zeros(n_values, dtype=np.int64)
    nl = np.int64(0)
    nr = np.int64(0)
    for t in range(a, b):
        c = perm[t]
        if q[j, c] <= cut:
            hl[s[c]] += w[c]
            nl += iw[c]
        else:
            hr[s[c]] += w[c]
            nr += iw[c]
    merged = stats.copy()
    if nl == 0 or nr == 0:
        return False, merged
    tl = profile_terms(hl, nl, case, pt_sig, pt_l, pt_k, pt_m)
    tr = profile_terms(hr, nr, case, pt_sig, pt_l, pt_k, pt_m)
    for p in range(stats.shape[0]):
        for x in range(5):
            v = merged[p, x]
            if tl[p, x] < v:
                v = tl[p, x]
            if tr[p, x] < v:
                v = tr[p, x]
            merged[p, x] = v
    return pairs_safe(merged, thr, strict), merged


@kernel
def whole_terms(s, w, iw, n_values, case, pt_sig, pt_l, pt_k, pt_m):
    """Terms of the single group made of every cell (the initial statistics)."""
    hist = np.zeros(n_values, dtype=np.int64)
    n = np.int64(0)
    for c in range(s.shape[0]):
        hist[s[c]] += w[c]
        n += iw[c]
    return profile_terms(hist, n, case, pt_sig, pt_l, pt_k, pt_m)


@kernel
def skyline_partition(q, s, w, iw, pos, pos_off, ordered, gspan, n_values, case, pt_sig,
                      pt_l, pt_k, pt_m, thr, strict, widest):
    """SkylineAnonymize (Figure 6) with a built-in split ordering, fully compiled.

    Partitions are processed first-in first-out (the paper's queue). For each partition the
    candidate splits are the weighted lower-median cuts (Mondrian's rule, weights =
    individuals) of its attributes with more than one value, tried in order of decreasing
    normalized width (``widest`` = 1, Mondrian's order) or in QI order (``widest`` = 0); the
    first safe candidate is applied.

    Returns ``(group, n_groups, n_splits, n_rejected, stats, root_ok)``: the group of every
    cell (numbered in the order groups become final), the number of accepted and rejected
    candidate splits, the final statistics (pairs × 5), and whether the whole table was safe
    to begin with (if not, nothing is partitioned and ``group`` is all zeros).
    """
    d = q.shape[0]
    m_cells = q.shape[1]
    perm = np.arange(m_cells).astype(np.int64)
    group = np.zeros(m_cells, dtype=np.int32)
    stats = whole_terms(s, w, iw, n_values, case, pt_sig, pt_l, pt_k, pt_m)
    if not pairs_safe(stats, thr, strict):
        return group, 1, 0, 0, stats, False
    cap = 64
    qa = np.empty(cap, dtype=np.int64)
    qb = np.empty(cap, dtype=np.int64)
    head = 0
    tail = 1
    qa[0] = 0
    qb[0] = m_cells
    n_groups = 0
    n_splits = 0
    n_rejected = 0
    while head < tail:
        a = qa[head]
        b = qb[head]
        head += 1
        if widest:
            order = attribute_order(q, iw, perm, a, b, pos, pos_off, ordered, gspan)
        else:
            order = np.arange(d).astype(np.int64)
        done = False
        for t in range(order.shape[0]):
            j = order[t]
            cut, _wl = median_cut(q, iw, perm, a, b, j)
            if cut < 0:
                continue
            ok, merged = split_candidate(q, s, w, iw, perm, a, b, j, cut, n_values, case,
                                         pt_sig, pt_l, pt_k, pt_m, stats, thr, strict)
            if not ok:
                n_rejected += 1
                continue
            stats = merged
            mid = split_in_place(q, perm, a, b, j, cut)
            if tail + 2 > qa.shape[0]:
                # compact the consumed head, then grow if still needed
                live = tail - head
                na = np.empty(max(2 * live + 2, 64), dtype=np.int64)
                nb = np.empty(max(2 * live + 2, 64), dtype=np.int64)
                for u in range(live):  # a loop: no slice-assignment error formatter to compile
                    na[u] = qa[head + u]
                    nb[u] = qb[head + u]
                qa = na
                qb = nb
                head = 0
                tail = live
            qa[tail] = a
            qb[tail] = mid
            qa[tail + 1] = mid
            qb[tail + 1] = b
            tail += 2
            n_splits += 1
            done = True
            break
        if not done:
            n_groups = close_group(group, perm, a, b, n_groups)
    return group, n_groups, n_splits, n_rejected, stats, True
