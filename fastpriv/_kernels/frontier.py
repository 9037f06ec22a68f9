"""Every node of a generalization lattice in one pass: class counts, risk and loss terms.

:func:`lattice_node_stats` visits every node of the full-domain lattice once, depth first
along a spanning tree of it: a node's parent is the node one level lower in the attribute
raised last (in the order ``order``), so a node's equivalence classes are **rolled up**
from its parent's — each class's code of one attribute is mapped one level up its
hierarchy and equal tuples are merged (Flash's roll-up, as in
:mod:`fastpriv._kernels.lattice`, one attribute at a time). The table is grouped once, at
the bottom; every other node costs its parent's number of classes, and only the chain from
the bottom to the current node is held. A subtree holding no node whose counts are wanted
(``need``: the caller passes where the criterion can hold) is skipped whole.

A class is identified by one int64 key, its codes in bit fields as wide as the level-0
codes need (a higher level has fewer codes, so the fields hold at every node): raising
attribute ``a`` changes a key by (new code − old code)·2^shift_a, one gather and one
multiply-add per row, then a hash probe. A node keeps the codes of the attributes its
subtree still raises (the others are read back from the key where needed). When the
fields need more than 62 bits the classes are tuples of codes instead, hashed and
compared whole (:func:`_merge_tuples`; same results).

Per node, under k-anonymity's suppression rule (classes of fewer than ``k`` people are
suppressed when they hold at most ``budget`` people; ``k ≤ 1`` suppresses nothing):

* the number of classes, kept classes K, suppressed people S, the smallest kept class,
  Σ_kept n_g², kept classes of one person (sample uniques);
* per attribute a, Σ_kept n_g · leaves_a(g) (``leaves``: rows of the attribute's hierarchy
  under the class's generalized value — ARX's loss; every row's share at the node's level,
  less the suppressed classes') and Σ_c s_c·log2(s_c/S) over the generalized values c of
  the suppressed people (ARX's non-monotonic entropy);
* optionally the histogram of kept class sizes (for population-uniqueness models).
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel

_MULT = np.uint64(0x9E3779B97F4A7C15)


@kernel(helper=True)
def _table_bits(m):
    """Bits of an open-addressing table for ``m`` keys (load ≤ 1/2, at least 16 slots)."""
    bits = 4
    while (np.int64(1) << bits) < 2 * m:
        bits += 1
    return bits


@kernel(helper=True)
def _merge_keys(key, w, col, step, off, radix, space, table):
    """Merge rows whose key, with one attribute raised, is equal.

    Row ``i``'s key becomes ``key[i] + (step[off + col[i]] − col[i])·radix`` (``radix``
    0: unchanged). ``table`` (int64, −1 everywhere on entry and on return) is the work
    table, slot ``s`` holding a key at ``2s`` and its people at ``2s + 1`` (one cache line
    per probe), sized for min(rows, ``space``) keys (``space``: the tuples the node's
    levels allow), so a node of few classes probes a table that stays in cache. Returns
    the classes' keys, people and first rows.
    """
    m = key.shape[0]
    bits = _table_bits(min(m, space))
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    okey = np.empty(m, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    used = np.empty(m, dtype=np.int64)
    g = 0
    for i in range(m):
        c = col[i]
        kk = key[i] + (step[off + c] - c) * radix
        s = np.int64((np.uint64(kk) * _MULT) >> shift)
        while True:
            x = table[2 * s]
            if x == kk:
                table[2 * s + 1] += w[i]
                break
            if x < 0:
                table[2 * s] = kk
                table[2 * s + 1] = w[i]
                used[g] = s
                okey[g] = kk
                first[g] = i
                g += 1
                break
            s = (s + 1) & mask
    ow = np.empty(g, dtype=np.int64)
    for j in range(g):
        s = used[j]
        ow[j] = table[2 * s + 1]
        table[2 * s] = -1
    return okey[:g], ow, first[:g]


@kernel(helper=True)
def _merge_tuples(src, w, a, step, off, slots, cur):
    """Classes of ``src`` (int32 (d, m) codes) with attribute ``a`` raised one level.

    For key spaces beyond 62 bits: a 64-bit hash of the tuple, then a comparison of the
    codes. ``a < 0`` merges the rows as they are. ``slots`` (int32, −1 everywhere on entry
    and on return) is the work table. Returns the classes' codes (d, g), people, first rows.
    """
    d, m = src.shape
    bits = _table_bits(m)
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    out = np.empty((d, m), dtype=np.int32)
    ow = np.zeros(m, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    used = np.empty(m, dtype=np.int64)
    g = 0
    for i in range(m):
        h = np.uint64(0)
        for j in range(d):
            c = src[j, i]
            if j == a:
                c = step[off + c]
            cur[j] = c
            h = (h ^ np.uint64(c)) * _MULT
        s = np.int64(h >> shift)
        while True:
            x = slots[s]
            if x < 0:
                slots[s] = g
                used[g] = s
                for j in range(d):
                    out[j, g] = cur[j]
                ow[g] = w[i]
                first[g] = i
                g += 1
                break
            same = True
            for j in range(d):
                if out[j, x] != cur[j]:
                    same = False
                    break
            if same:
                ow[x] += w[i]
                break
            s = (s + 1) & mask
    for j in range(g):
        slots[used[j]] = -1
    return out[:, :g].copy(), ow[:g].copy(), first[:g].copy()


@kernel(helper=True)
def _size_stats(w, k, budget, pos, n_classes, kept, sup, min_kept, sum_sq, uniques, ok):
    """Record the class-size statistics of one node at ``pos``; return whether it is ok."""
    g = w.shape[0]
    s = np.int64(0)
    kk = np.int64(0)
    sq = np.int64(0)
    lo = np.int64(-1)
    u = np.int64(0)
    for i in range(g):
        x = w[i]
        if x < k:
            s += x
            continue
        kk += 1
        sq += x * x
        if lo < 0 or x < lo:
            lo = x
        if x == 1:
            u += 1
    n_classes[pos] = g
    sup[pos] = s
    if s > budget:
        return False
    kept[pos] = kk
    sum_sq[pos] = sq
    min_kept[pos] = max(lo, 0)
    uniques[pos] = u
    ok[pos] = budget == 0 or kk > 0
    return ok[pos]


@kernel(helper=True)
def _loss_terms(sup_codes, sup_w, lev, pos, totals, leaves, leaf_off, cards, per,
                kept_leaves, sup_ent):
    """Loss terms of one node: every row's leaves less the suppressed classes', and entropy.

    ``sup_codes`` (d, s) and ``sup_w`` (s,) are the suppressed classes (none: nothing
    suppressed); ``totals[a, l]`` = Σ_rows people·leaves at level ``l``.
    """
    d = sup_codes.shape[0]
    n_sup = sup_w.shape[0]
    total = np.int64(0)
    for i in range(n_sup):
        total += sup_w[i]
    for a in range(d):
        la = lev[a]
        off = leaf_off[a, la]
        x = totals[a, la]
        for i in range(n_sup):
            x -= sup_w[i] * leaves[off + sup_codes[a, i]]
            per[sup_codes[a, i]] += float(sup_w[i])
        kept_leaves[pos, a] = x
        if n_sup == 0:
            continue
        sf = float(total)
        e = 0.0
        for c in range(cards[a, la]):      # ascending codes, as the lattice's own sum
            y = per[c]
            if y > 0:
                e += y * (np.log(y / sf) / np.log(2.0))
                per[c] = 0.0
        sup_ent[pos, a] = e


@kernel(helper=True)
def _histogram(w, k, hs, hc, nh):
    """Append the histogram of kept class sizes (ascending) to ``hs``/``hc`` from ``nh``."""
    sizes = np.sort(w)
    start = nh
    need = nh + sizes.shape[0]
    if need > hs.shape[0]:
        cap = max(2 * hs.shape[0], need)
        ns = np.empty(cap, dtype=np.int64)
        nc = np.empty(cap, dtype=np.int64)
        ns[:nh] = hs[:nh]
        nc[:nh] = hc[:nh]
        hs, hc = ns, nc
    for x in sizes:
        if x < k:
            continue
        if nh > start and hs[nh - 1] == x:
            hc[nh - 1] += 1
        else:
            hs[nh] = x
            hc[nh] = 1
            nh += 1
    return hs, hc, nh


@kernel(helper=True)
def _level_totals(codes, w, step, step_off, heights, leaves, leaf_off):
    """Σ_rows people · leaves of the row's code, per attribute and level (int64 (d, hmax))."""
    m, d = codes.shape
    out = np.zeros((d, leaf_off.shape[1]), dtype=np.int64)
    for a in range(d):
        for i in range(m):
            c = codes[i, a]
            for lv in range(heights[a]):
                out[a, lv] += w[i] * leaves[leaf_off[a, lv] + c]
                if lv + 1 < heights[a]:
                    c = step[step_off[a, lv] + c]
    return out


@kernel(helper=True)
def _suppressed(keys, cols, w, k, shift, fmask, tuples):
    """Codes (d, s) and people (s,) of the classes smaller than ``k`` (from keys or tuples)."""
    d = shift.shape[0]
    s = 0
    for i in range(w.shape[0]):
        if w[i] < k:
            s += 1
    out = np.empty((d, s), dtype=np.int32)
    ow = np.empty(s, dtype=np.int64)
    j = 0
    for i in range(w.shape[0]):
        if w[i] < k:
            for a in range(d):
                if tuples:
                    out[a, j] = cols[a, i]
                else:
                    out[a, j] = (keys[i] >> shift[a]) & fmask[a]
            ow[j] = w[i]
            j += 1
    return out, ow


@kernel
def lattice_node_stats(codes, weights, step, step_off, heights, order, k, budget, leaves,
                       leaf_off, cards, hist_mask, need, tuples):
    """Class counts of every node of the lattice, rolled up depth first (module docstring).

    Parameters
    ----------
    codes : int32 (m, d)
        Level-0 code of every row (a row may stand for several people, ``weights``).
    weights : int64 (m,)
        People per row (≥ 1).
    step : int32 (total,)
        One-level maps: code ``c`` of attribute ``a`` at level ``l`` is ``step[step_off[a,
        l] + c]`` at level ``l + 1``.
    step_off : int64 (d, hmax)
        Offsets into ``step`` per attribute and level.
    heights : int64 (d,)
        Levels per attribute; nodes are numbered in C order of the grid of this shape.
    order : int64 (d,)
        Attribute order of the spanning tree (a permutation of ``0..d-1``; a node's parent
        lowers the attribute raised last).
    k, budget : int
        Suppression rule: classes of fewer than ``k`` people are suppressed when they hold
        at most ``budget`` people together; a node is *ok* when they do (and, with
        ``budget > 0``, some class is kept).
    leaves : int64 (total,)
        ``leaves[leaf_off[a, l] + c]``: hierarchy rows under code ``c`` of level ``l``.
    leaf_off : int64 (d, hmax)
        Offsets into ``leaves`` per attribute and level.
    cards : int64 (d, hmax)
        Codes per level.
    hist_mask : bool (N,)
        Nodes whose histogram of kept class sizes is recorded (when they keep a class of
        one person).
    need : bool (d, N)
        ``need[q, y]``: whether the subtree of node ``y`` reached by raising the attribute
        at position ``q`` of ``order`` — ``y`` and the nodes above it that differ from it
        only in attributes at positions ≥ q — holds a node whose counts are wanted; a
        node whose subtree holds none is neither rolled up nor visited (counts left 0).
    tuples : bool
        Hash whole tuples even when the keys would fit 62 bits (the general path; tests).

    Returns
    -------
    n_classes, kept, suppressed, min_kept, sum_sq, uniques : int64 (N,)
        Per node; the kept statistics are left 0 where the suppressed people exceed
        ``budget``, ``kept_leaves`` and ``sup_ent`` where the node is not ok.
    ok : bool (N,)
    kept_leaves : int64 (N, d)
    sup_ent : float64 (N, d)
    hist_pos, hist_ptr, hist_size, hist_count : int64
        Histograms of the recorded nodes: node ``hist_pos[j]`` has ``hist_count[i]`` kept
        classes of ``hist_size[i]`` people for ``i`` in ``hist_ptr[j]:hist_ptr[j+1]``.
    visited : int64
        Rows of parents rolled up (the work done).

    """
    m, d = codes.shape
    n_nodes = 1
    for a in range(d):
        n_nodes *= heights[a]
    strides = np.ones(d, dtype=np.int64)
    for a in range(d - 2, -1, -1):
        strides[a] = strides[a + 1] * heights[a + 1]
    n_classes = np.zeros(n_nodes, dtype=np.int64)
    kept = np.zeros(n_nodes, dtype=np.int64)
    sup = np.zeros(n_nodes, dtype=np.int64)
    min_kept = np.zeros(n_nodes, dtype=np.int64)
    sum_sq = np.zeros(n_nodes, dtype=np.int64)
    uniques = np.zeros(n_nodes, dtype=np.int64)
    ok = np.zeros(n_nodes, dtype=np.bool_)
    kept_leaves = np.zeros((n_nodes, d), dtype=np.int64)
    sup_ent = np.zeros((n_nodes, d), dtype=np.float64)
    cmax = 1
    for a in range(d):
        for lv in range(heights[a]):
            cmax = max(cmax, cards[a, lv])
    per = np.zeros(cmax, dtype=np.float64)
    totals = _level_totals(codes, weights, step, step_off, heights, leaves, leaf_off)
    # keys: each attribute's code in a bit field as wide as its level-0 codes need (a
    # higher level has fewer codes), the last attribute in the lowest bits
    radix = np.zeros(d, dtype=np.int64)
    shift = np.zeros(d, dtype=np.int64)
    fmask = np.ones(d, dtype=np.int64)
    used_bits = 0
    for a in range(d - 1, -1, -1):
        width = 0
        while (np.int64(1) << width) < cards[a, 0]:
            width += 1
        shift[a] = min(used_bits, 62)
        radix[a] = np.int64(1) << shift[a]
        fmask[a] = (np.int64(1) << width) - 1
        used_bits += width
    if used_bits > 62:
        tuples = True
    size = 16
    while size < 2 * m:
        size *= 2
    table = np.full(2 * size, -1, dtype=np.int64)
    slots = np.full(size, -1, dtype=np.int32)
    cur = np.empty(d, dtype=np.int32)
    hist_pos = np.empty(64, dtype=np.int64)
    hist_ptr = np.zeros(65, dtype=np.int64)
    hs = np.empty(256, dtype=np.int64)
    hc = np.empty(256, dtype=np.int64)
    nh = np.int64(0)       # typed counters: a literal 0 would give the helpers a second
    n_hist = np.int64(0)   # specialization
    depth = 1
    for a in range(d):
        depth += heights[a] - 1
    lev = np.zeros((depth, d), dtype=np.int64)
    nextp = np.zeros(depth, dtype=np.int64)
    posd = np.zeros(depth, dtype=np.int64)     # grid position of the node at each depth
    # the bottom node: rows merged as they are
    cols0 = np.empty((d, m), dtype=np.int32)     # writable copies: one type per helper
    for i in range(m):
        for a in range(d):
            cols0[a, i] = codes[i, a]
    w_rows = weights.copy()
    zero = np.int64(0)
    if tuples:
        q0, w0, first = _merge_tuples(cols0, w_rows, -d, step, zero, slots, cur)
        k0 = np.zeros(q0.shape[1], dtype=np.int64)
    else:
        rk = np.zeros(m, dtype=np.int64)
        for a in range(d):
            for i in range(m):
                rk[i] += cols0[a, i] * radix[a]
        k0, w0, first = _merge_keys(rk, w_rows, cols0[0], step, zero, zero, np.int64(m), table)
        q0 = np.empty((d, first.shape[0]), dtype=np.int32)
        for a in range(d):
            for j in range(first.shape[0]):
                q0[a, j] = cols0[a, first[j]]
    stack_k = [k0]
    stack_w = [w0]
    stack_q = [q0]
    for _ in range(depth - 1):
        stack_k.append(k0)
        stack_w.append(w0)
        stack_q.append(q0)
    visited = np.int64(m)
    t = 0
    pos = np.int64(0)
    while True:
        w = stack_w[t]
        if _size_stats(w, k, budget, pos, n_classes, kept, sup, min_kept, sum_sq, uniques, ok):
            sc, sw = _suppressed(stack_k[t], stack_q[t], w, k, shift, fmask, tuples)
            _loss_terms(sc, sw, lev[t], pos, totals, leaves, leaf_off, cards, per,
                        kept_leaves, sup_ent)
            if uniques[pos] > 0 and hist_mask[pos]:
                if n_hist + 1 >= hist_pos.shape[0]:
                    cap = 2 * hist_pos.shape[0]
                    grown = np.empty(cap, dtype=np.int64)
                    grown[:n_hist] = hist_pos[:n_hist]
                    hist_pos = grown
                    grown = np.zeros(cap + 1, dtype=np.int64)
                    grown[:n_hist + 1] = hist_ptr[:n_hist + 1]
                    hist_ptr = grown
                hs, hc, nh = _histogram(w, k, hs, hc, nh)
                hist_pos[n_hist] = pos
                n_hist += 1
                hist_ptr[n_hist] = nh
        # next node: the first raisable attribute at or after the one this node raised
        # whose subtree is wanted, else back up the chain
        p = d
        while t >= 0:
            p = nextp[t]
            while p < d:
                b = order[p]
                if lev[t, b] + 1 < heights[b] and need[p, posd[t] + strides[b]]:
                    break
                p += 1
            if p < d:
                break
            t -= 1
        if t < 0:
            break
        nextp[t] = p + 1
        a = order[p]
        off = step_off[a, lev[t, a]]
        src_q = stack_q[t]
        visited += stack_w[t].shape[0]
        if tuples:
            q, w, first = _merge_tuples(src_q, stack_w[t], a, step, off, slots, cur)
            kc = k0
        else:
            space = np.int64(1)    # tuples the child's levels allow (capped at its rows)
            for b in range(d):
                space = min(space * cards[b, lev[t, b] + (1 if b == a else 0)],
                            src_q.shape[1])
            kc, w, first = _merge_keys(stack_k[t], stack_w[t], src_q[a], step, off,
                                       radix[a], space, table)
            # the codes the subtree still raises (attributes at or after position p)
            q = np.empty((d, first.shape[0]), dtype=np.int32)
            for pp in range(p, d):
                b = order[pp]
                if lev[t, b] + (1 if b == a else 0) + 1 >= heights[b]:
                    continue
                for j in range(first.shape[0]):
                    c = src_q[b, first[j]]
                    q[b, j] = step[off + c] if b == a else c
        lev[t + 1] = lev[t]
        lev[t + 1, a] += 1
        nextp[t + 1] = p
        t += 1
        stack_k[t] = kc
        stack_w[t] = w
        stack_q[t] = q
        pos = posd[t - 1] + strides[a]
        posd[t] = pos
    return (n_classes, kept, sup, min_kept, sum_sq, uniques, ok, kept_leaves, sup_ent,
            hist_pos[:n_hist].copy(), hist_ptr[:n_hist + 1].copy(), hs[:nh].copy(),
            hc[:nh].copy(), visited)
