"""Lattice-search kernels: roll a node's equivalence classes up from a lower node's.

A *materialized node* is the list of its distinct rows — the equivalence classes (or the
distinct (class, sensitive value) pairs) with their generalized code per attribute
(``q[a, i]``, int32) and their number of individuals (``w[i]``, int64). Any node above it
is obtained by mapping every row's codes one step of the hierarchy further (a gather
``maps[offsets[a] + q[a, i]]`` from the lower node's level to the higher node's) and
merging equal tuples: Flash's roll-up, with work proportional to the lower node's rows —
far fewer than the table's distinct cells once any attribute is generalized. Keys are
computed in blocks of rows, attribute by attribute, so a block stays in L1.

:func:`rollup` ranks the mixed-radix keys of the generalized tuples by direct addressing
when the key space is small (≤ 32·rows + 65536 slots) and with an open-addressing hash
table otherwise (sized to the classes found, so it stays in cache), numbering classes in
order of first appearance (not lexicographic: the search only needs the partition). Keys
that do not fit 62 bits are reported (``n_groups = -1``) and the caller falls back to the
sorting regroup of :mod:`fastpriv._kernels.generalize`.

:func:`size_stats` and :func:`profile_stats` decide a node under a suppression budget and
stop as soon as the suppressed individuals exceed it (fail fast); otherwise they return
what the utility measures need (Σ n_g² and number of kept groups), so minimal nodes are
scored without being recounted.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .generalize import profile_ok

_BLOCK = 2048


@kernel(helper=True)
def _block_keys(q, maps, offsets, cards, start, stop, key):
    """Write the mixed-radix keys of rows ``start:stop`` into ``key[0:stop-start]``.

    Attribute by attribute: the block stays in L1 between attributes.
    """
    n = stop - start
    o = offsets[0]
    for j in range(n):
        key[j] = maps[o + q[0, start + j]]
    for a in range(1, q.shape[0]):
        c = cards[a]
        o = offsets[a]
        for j in range(n):
            key[j] = key[j] * c + maps[o + q[a, start + j]]


@kernel
def _rehash(keys, vals, bits, mult):
    """Return the open-addressing table ``(keys, vals)`` re-inserted into ``2**bits`` slots."""
    mask = (np.int64(1) << bits) - 1
    nkeys = np.full(mask + 1, -1, dtype=np.int64)
    nvals = np.empty(mask + 1, dtype=np.int32)
    for j in range(keys.shape[0]):
        kj = keys[j]
        if kj >= 0:
            hj = np.int64((np.uint64(kj) * mult) >> np.uint64(64 - bits))
            while nkeys[hj] >= 0:
                hj = (hj + 1) & mask
            nkeys[hj] = kj
            nvals[hj] = vals[j]
    return nkeys, nvals


@kernel(helper=True)
def _hash_rollup(key, q, maps, offsets, cards, w, max_groups, need_group, bnd, k, budget, keep,
                 group, sizes, first, before):
    """:func:`rollup` through an open-addressing hash table (large key spaces).

    Sized to the classes found so far (doubled at half load), so the table stays in cache
    when a node has few classes however many rows it rolls up. Returns ``(classes,
    status)`` (status 0, −2 or −3 as :func:`rollup`'s ``n_groups``).
    """
    bits = 12
    mask = (np.int64(1) << bits) - 1
    keys = np.full(mask + 1, -1, dtype=np.int64)
    vals = np.empty(mask + 1, dtype=np.int32)
    mult = np.uint64(0x9E3779B97F4A7C15)
    g = 0
    sup = np.int64(0)
    for p in range(bnd.shape[0] - 1):
        before[p] = g
        for start in range(bnd[p], bnd[p + 1], _BLOCK):
            stop = min(start + _BLOCK, bnd[p + 1])
            _block_keys(q, maps, offsets, cards, start, stop, key)
            for i in range(start, stop):
                kk0 = key[i - start]
                h = np.int64((np.uint64(kk0) * mult) >> np.uint64(64 - bits))
                while True:
                    kk = keys[h]
                    if kk == kk0:
                        s = vals[h]
                        break
                    if kk < 0:
                        if g >= max_groups:
                            return g, -2
                        keys[h] = kk0
                        vals[h] = g
                        s = g
                        first[g] = i
                        g += 1
                        if 2 * g > mask:
                            bits += 1
                            mask = (np.int64(1) << bits) - 1
                            keys, vals = _rehash(keys, vals, bits, mult)
                        break
                    h = (h + 1) & mask
                if need_group:
                    group[i] = s
                sizes[s] += w[i]
        for j in range(before[p], g):
            if sizes[j] < k:
                sup += sizes[j]
        if sup > budget:
            if g > keep * (bnd[p + 1] - bnd[0]):
                return g, -3
            k = 0
    return g, 0


@kernel
def rollup(q, maps, offsets, cards, w, max_groups, slot, need_group, bnd, k, budget, keep):
    """Merge rows whose generalized tuples are equal.

    Parameters
    ----------
    q : int32 (d, m)
        Codes of each row at the lower node's levels (or packed codes of attribute
        groups, see :func:`joint_tables`).
    maps : int32 (total,)
        Concatenated gather tables; attribute ``a`` uses ``maps[offsets[a] + code]``.
    offsets, cards : int64 (d,)
        Offset of each attribute's table and number of codes at the higher level.
    w : int64 (m,)
        Individuals per row.
    max_groups : int
        Stop as soon as more classes than this appear (fail fast: under k-anonymity with
        a budget of b suppressed individuals no node with more than n/k + b classes can
        pass); ``n_groups`` is then ``-2``.
    slot : int32 (S,)
        Work buffer, every entry −1 on entry and on return: key spaces up to ``S`` are
        ranked by direct addressing into it (no allocation, no fill per call), larger ones
        with an open-addressing hash table sized to the classes found.
    need_group : bool
        Whether to return the class of each row (else ``group`` is empty).
    bnd : int64 (P + 1,)
        Partition of the rows into consecutive blocks ``bnd[p]:bnd[p+1]`` (``bnd[0] = 0``,
        ``bnd[P] = m``) such that no class of the higher node spans two blocks (the rows
        are sorted by an attribute coarser than the higher node's level of it); ``[0, m]``
        is always valid.
    k, budget : int
        Fail fast on suppression: after each block its classes are complete, and the
        individuals in classes smaller than ``k`` are summed; the scan stops once they
        exceed ``budget`` (``n_groups`` is then ``-3``). ``k = 0`` never stops.
    keep : float
        ... unless the classes found so far number at most ``keep`` times the rows
        scanned: then the node is worth caching as a source for later roll-ups (the
        caller keeps failing nodes of at most that share of rows), and the scan goes on to
        the end.

    Returns
    -------
    group : int32 (m,) or (0,)
        Class of each row (first-appearance order).
    sizes : int64 (n_groups,)
        Σ w over each class.
    first : int64 (n_groups,)
        First row of each class.
    n_groups : int
        ``-1`` when the key space exceeds 62 bits (nothing else is computed), ``-2`` when
        the scan stopped past ``max_groups``, ``-3`` when it stopped past ``budget``.
    before : int64 (P + 1,)
        Classes numbered before each block (``before[P]`` = ``n_groups``); classes are
        numbered in scan order, so a block's classes are consecutive.

    """
    d = q.shape[0]
    m = q.shape[1]
    n_parts = bnd.shape[0] - 1
    before = np.zeros(n_parts + 1, dtype=np.int64)
    space = np.int64(1)
    for a in range(d):
        c = max(cards[a], 1)
        if space > (np.int64(1) << 62) // c:
            return (np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64),
                    -1, before)
        space *= c
    cap = min(m, max_groups + 1)
    cap = min(cap, space)
    group = np.empty(m if need_group else 0, dtype=np.int32)
    sizes = np.zeros(cap, dtype=np.int64)
    first = np.empty(cap, dtype=np.int64)
    ckey = np.empty(cap, dtype=np.int64)
    key = np.empty(_BLOCK, dtype=np.int64)
    g = 0
    sup = np.int64(0)
    status = 0
    direct = space <= slot.shape[0]
    if direct:
        for p in range(n_parts):
            before[p] = g
            for start in range(bnd[p], bnd[p + 1], _BLOCK):
                stop = min(start + _BLOCK, bnd[p + 1])
                _block_keys(q, maps, offsets, cards, start, stop, key)
                for i in range(start, stop):
                    kk = key[i - start]
                    s = slot[kk]
                    if s < 0:
                        if g >= max_groups:
                            status = -2
                            break
                        s = g
                        slot[kk] = g
                        first[g] = i
                        ckey[g] = kk
                        g += 1
                    if need_group:
                        group[i] = s
                    sizes[s] += w[i]
                if status < 0:
                    break
            if status < 0:
                break
            # the block's classes are complete: the individuals they would suppress
            for j in range(before[p], g):
                if sizes[j] < k:
                    sup += sizes[j]
            if sup > budget:
                if g > keep * (bnd[p + 1] - bnd[0]):
                    status = -3
                    break
                k = 0    # worth caching: finish the scan
        for j in range(g):
            slot[ckey[j]] = -1
    else:
        g, status = _hash_rollup(key, q, maps, offsets, cards, w, max_groups, need_group, bnd,
                                 k, budget, keep, group, sizes, first, before)
    if status < 0:
        return group, sizes[:0].copy(), first[:0].copy(), status, before
    before[n_parts] = g
    return group, sizes[:g].copy(), first[:g].copy(), g, before


@kernel
def size_stats(sizes, k, budget):
    """k-anonymity of classes of the given sizes under a suppression budget.

    Returns ``(suppressed, exceeded, n_kept, sum_sq_kept)``: individuals in classes smaller
    than ``k``, whether that exceeds ``budget`` (then the scan stopped there and the other
    numbers are partial), the number of kept classes and Σ n_g² over them.
    """
    sup = np.int64(0)
    kept = np.int64(0)
    sq = np.int64(0)
    for g in range(sizes.shape[0]):
        n = sizes[g]
        if n < k:
            sup += n
            if sup > budget:
                return sup, True, kept, sq
        else:
            kept += 1
            sq += n * n
    return sup, False, kept, sq


@kernel
def profile_stats(indptr, codes, counts, sizes, kinds, iparams, fparams, q, qrank, inv_q,
                  budget):
    """Apply :func:`size_stats` to any conjunction of local criteria.

    Profiles in CSR form (counts descending); failing groups are decided by
    :func:`~fastpriv._kernels.generalize.profile_ok`.
    """
    dense = np.zeros(q.shape[0], dtype=np.float64)
    wcodes = codes.copy()
    wcounts = counts.copy()
    sup = np.int64(0)
    kept = np.int64(0)
    sq = np.int64(0)
    for g in range(indptr.shape[0] - 1):
        n = sizes[g]
        if profile_ok(wcodes, wcounts, indptr[g], indptr[g + 1], n, kinds, iparams, fparams,
                      q, qrank, inv_q, dense):
            kept += 1
            sq += n * n
        else:
            sup += n
            if sup > budget:
                return sup, True, kept, sq
    return sup, False, kept, sq


@kernel(helper=True)
def radix_product(card, attrs, lo, hi):
    """Return the number of packed codes of the attribute group ``attrs[lo:hi]``: Π card[a]."""
    p = 1
    for i in range(lo, hi):
        p *= card[attrs[i]]
    return p


@kernel
def joint_tables(gptr, gattr, scard, maps, offsets, tcard):
    """Gather tables of packed attribute groups (one gather per group instead of per attribute).

    A materialized node stores the codes of a *group* of attributes ``gattr[gptr[g]:
    gptr[g+1]]`` as one mixed-radix code (radices ``scard``, the node's cardinalities).
    For a higher node (level-to-level tables at ``maps[offsets[a] + code]``, cardinalities
    ``tcard``) this builds, per group, the table from the packed code to a packed code of
    the higher node's levels, so :func:`rollup` maps a row with one gather per group.

    Returns ``(tables, table offsets (G,), packed cardinalities (G,))``.
    """
    n_g = gptr.shape[0] - 1
    toff = np.zeros(n_g, dtype=np.int64)
    gcard = np.ones(n_g, dtype=np.int64)
    total = 0
    for g in range(n_g):
        toff[g] = total
        for i in range(gptr[g], gptr[g + 1]):
            gcard[g] *= tcard[gattr[i]]
        total += radix_product(scard, gattr, gptr[g], gptr[g + 1])
    tab = np.empty(total, dtype=np.int32)
    for g in range(n_g):
        # built attribute by attribute (first = most significant digit): the table of the
        # first j attributes, entry i, expands into entries i*c .. i*c + c - 1 (backwards,
        # in place), so each entry costs one multiply-add instead of a decode
        base = toff[g]
        size = 1
        tab[base] = 0
        for i in range(gptr[g], gptr[g + 1]):
            a = gattr[i]
            c = scard[a]
            t = tcard[a]
            o = offsets[a]
            for r in range(size - 1, -1, -1):
                v = tab[base + r] * t
                for j in range(c - 1, -1, -1):
                    tab[base + r * c + j] = v + maps[o + j]
            size *= c
    return tab, toff, gcard


@kernel
def repack_rows(qp, gptr, gattr, scard, maps, offsets, rows, tptr, tattr, tcard):
    """Packed codes of a higher node for the given rows of a lower node.

    The lower node's rows ``rows`` (packed in groups ``gattr[gptr[g]:gptr[g+1]]`` with
    radices ``scard``) are mapped to the higher node's levels (``maps[offsets[a] + code]``)
    and packed in its groups ``tattr[tptr[g]:tptr[g+1]]`` with radices ``tcard``. Per
    attribute, a table from its group's packed code to its code at the higher level is
    built first, so each row costs one gather per attribute (no division).
    """
    d = scard.shape[0]
    which = np.full(d, -1, dtype=np.int64)
    aoff = np.zeros(d, dtype=np.int64)
    total = 0
    for g in range(gptr.shape[0] - 1):
        p = radix_product(scard, gattr, gptr[g], gptr[g + 1])
        for i in range(gptr[g], gptr[g + 1]):
            which[gattr[i]] = g
            aoff[gattr[i]] = total
            total += p
    atab = np.empty(max(total, 1), dtype=np.int32)
    for g in range(gptr.shape[0] - 1):
        lo = gptr[g]
        hi = gptr[g + 1]
        p = radix_product(scard, gattr, lo, hi)
        for code in range(p):
            x = code
            for i in range(hi - 1, lo - 1, -1):
                a = gattr[i]
                atab[aoff[a] + code] = maps[offsets[a] + x % scard[a]]
                x //= scard[a]
    n = rows.shape[0]
    out = np.zeros((tptr.shape[0] - 1, n), dtype=np.int32)
    for g in range(tptr.shape[0] - 1):
        for i in range(tptr[g], tptr[g + 1]):
            a = tattr[i]
            c = tcard[a]
            src = which[a]
            if src < 0:   # one code below, so one code above: contributes 0
                for j in range(n):
                    out[g, j] = out[g, j] * c
                continue
            o = aoff[a]
            for j in range(n):
                out[g, j] = out[g, j] * c + atab[o + qp[src, rows[j]]]
    return out


@kernel
def pack_codes(q, gptr, gattr, scard):
    """Pack ``q`` (d, m) into one mixed-radix code per attribute group, ``(G, m)`` int32."""
    m = q.shape[1]
    out = np.zeros((gptr.shape[0] - 1, m), dtype=np.int32)
    for g in range(gptr.shape[0] - 1):
        for i in range(gptr[g], gptr[g + 1]):
            a = gattr[i]
            c = scard[a]
            for j in range(m):
                out[g, j] = out[g, j] * c + q[a, j]
    return out


@kernel
def pick_source(levels, rows, n, node):
    """Index of the cached node below ``node`` with the fewest rows.

    ``levels[:n]`` (int64 (cap, d)) and ``rows[:n]`` describe the cache; entry 0 (the bottom
    node) is below every node, so an index is always found.
    """
    best = 0
    best_rows = rows[0]
    d = node.shape[0]
    for i in range(1, n):
        if rows[i] >= best_rows:
            continue
        below = True
        for a in range(d):
            if levels[i, a] > node[a]:
                below = False
                break
        if below:
            best = i
            best_rows = rows[i]
    return best


@kernel
def tag_box(flat, strides, heights, node, up, value):
    """Set every node ≥ ``node`` (``up`` = 1) or ≤ ``node`` (``up`` = 0) to ``value``.

    The up-set / down-set of a node is one box of the C-ordered grid ``flat`` (strides
    ``strides``, shape ``heights``), walked with an odometer. Returns how many of its
    entries were 0 (untagged) before.
    """
    d = node.shape[0]
    lo = np.empty(d, dtype=np.int64)
    hi = np.empty(d, dtype=np.int64)
    pos = 0
    for a in range(d):
        lo[a] = node[a] if up else 0
        hi[a] = heights[a] if up else node[a] + 1
        pos += lo[a] * strides[a]
    idx = lo.copy()
    count = 0
    while True:
        if flat[pos] == 0:
            count += 1
        flat[pos] = value
        a = d - 1
        while a >= 0:
            idx[a] += 1
            pos += strides[a]
            if idx[a] < hi[a]:
                break
            pos -= (idx[a] - lo[a]) * strides[a]
            idx[a] = lo[a]
            a -= 1
        if a < 0:
            return count


@kernel
def upward_path(flat, strides, heights, node, rel_step):
    """Flash's path from ``node`` upwards through untagged nodes, as flat grid positions.

    Each step raises the attribute with the lowest relative level ``node[a]·rel_step[a]``
    (0 for one-level attributes; ties → lower index) whose raised node is untagged
    (``flat[pos] == 0``, ``pos = Σ node[a]·strides[a]``); the path ends when none is.
    """
    d = node.shape[0]
    cur = node.copy()
    n_max = 1
    pos = 0
    for a in range(d):
        n_max += heights[a] - 1 - node[a]
        pos += node[a] * strides[a]
    path = np.empty(n_max, dtype=np.int64)
    path[0] = pos
    n = 1
    key = np.empty(d, dtype=np.float64)
    used = np.empty(d, dtype=np.bool_)
    while True:
        for a in range(d):
            key[a] = cur[a] * rel_step[a] if heights[a] > 1 else 0.0
            used[a] = cur[a] >= heights[a] - 1
        step = -1
        for _ in range(d):
            best = -1
            for a in range(d):
                if not used[a] and (best < 0 or key[a] < key[best]):
                    best = a
            if best < 0:
                break
            used[best] = True
            if flat[pos + strides[best]] == 0:
                step = best
                break
        if step < 0:
            return path[:n].copy()
        cur[step] += 1
        pos += strides[step]
        path[n] = pos
        n += 1


@kernel
def decide_sizes(q, gptr, gattr, scard, slev, maps, off_tab, card_tab, node, w, max_groups,
                 slot, k, budget, bnd, keep):
    """k-anonymity of ``node`` rolled up from one materialized node, in one call.

    :func:`joint_tables`, :func:`rollup` (classes only, no per-row output, failing fast
    past ``budget`` block by block of ``bnd`` unless the node is worth caching, see
    ``keep``) and :func:`size_stats` fused, so a check
    costs one dispatch. ``off_tab[a, i, j]`` and ``card_tab[a, j]`` are the level-to-level
    table offsets and level cardinalities; ``slev`` the source's levels. Returns
    ``(sizes, first, n_groups, suppressed, exceeded, n_kept, sum_sq_kept, offsets,
    before)``; ``n_groups`` is −1 / −2 / −3 as in :func:`rollup` (then the statistics are
    zeros).
    """
    d = node.shape[0]
    offs = np.empty(d, dtype=np.int64)
    cards = np.empty(d, dtype=np.int64)
    for a in range(d):
        offs[a] = off_tab[a, slev[a], node[a]]
        cards[a] = card_tab[a, node[a]]
    tab, toff, gcard = joint_tables(gptr, gattr, scard, maps, offs, cards)
    m = w.shape[0]
    lim = min(slot.shape[0], 32 * m + 65536)
    no_group = m < 0     # False, typed as a plain bool (a literal False would compile a
    #                      second specialization of rollup beside the one Python calls)
    _, sizes, first, ng, before = rollup(q, tab, toff, gcard, w, min(max_groups, m),
                                         slot[:lim], no_group, bnd, k, budget, keep)
    if ng < 0:
        return (sizes, first, ng, np.int64(0), False, np.int64(0), np.int64(0), offs,
                before)
    sup, exceeded, kept, sq = size_stats(sizes, k, budget)
    return sizes, first, ng, sup, exceeded, kept, sq, offs, before


@kernel
def quality_terms(codes, kept_w, sup_w, share, suppressed):
    """Per-attribute terms of ARX's quality models from a node's classes.

    ``codes[g]`` is class ``g``'s generalized code of the attribute, ``kept_w[g]`` /
    ``sup_w[g]`` its rows when kept / suppressed (the other one 0), ``share[c]`` the
    weight of code ``c`` (the caller passes the hierarchy leaves under ``c``: ARX's domain
    share ``DomainShareMaterialized`` times the domain size, so the sum is an exact
    integer) and ``suppressed`` the
    suppressed rows S. Returns ``(Σ_g kept_w[g]·share[codes[g]], Σ_c s_c·log2(s_c/S))``
    with s_c the suppressed rows of code ``c``: the kept part of ``MetricMDNMLoss``'s sum and
    ``MetricMDNUNMEntropy``'s suppression term (≤ 0; 0 when S = 0).
    """
    gen = 0.0
    per = np.zeros(share.shape[0], dtype=np.float64)
    for g in range(codes.shape[0]):
        c = codes[g]
        gen += kept_w[g] * share[c]
        per[c] += sup_w[g]
    ent = 0.0
    if suppressed > 0:
        for c in range(per.shape[0]):
            s = per[c]
            if s > 0:
                ent += s * (np.log(s / suppressed) / np.log(2.0))
    return gen, ent
