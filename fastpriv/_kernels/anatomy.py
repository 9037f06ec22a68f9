"""Anatomy bucketization kernel (Xiao & Tao, VLDB 2006).

Rows are hashed into buckets by sensitive value (rows of a bucket in a seeded random
order). While at least ℓ buckets are non-empty, one row is taken from each of the ℓ
largest buckets (ties broken by a seeded random priority) to form a group: a max-heap
keyed by (remaining rows, priority), O(n log V) in all. With the eligibility condition (no
value in more than n/ℓ rows) every bucket left over holds at most one row; the residual
rows (fewer than ℓ) are matched to distinct groups that do not contain their value
(maximum bipartite matching, groups tried in a seeded random order; when no such matching
exists, a row swap between two groups creates one — see the comments), so every group
ends with ℓ or ℓ+1 distinct values whenever there are at least as many groups as residual
rows (always when n ≥ ℓ(ℓ-1)).
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel(helper=True)
def _better(hs, hp, i, j):
    """Heap order: more remaining rows first, then higher priority."""
    if hs[i] != hs[j]:
        return hs[i] > hs[j]
    return hp[i] > hp[j]


@kernel(helper=True)
def _swap(hs, hp, hb, i, j):
    t = hs[i]
    hs[i] = hs[j]
    hs[j] = t
    tp = hp[i]
    hp[i] = hp[j]
    hp[j] = tp
    tb = hb[i]
    hb[i] = hb[j]
    hb[j] = tb


@kernel(helper=True)
def _promote(hs, hp, hb, c, p):
    """Swap heap entry c above its parent p when it is better; whether it was."""
    if _better(hs, hp, c, p):
        _swap(hs, hp, hb, c, p)
        return True
    return False


@kernel(helper=True)
def _sift_down(hs, hp, hb, i, size):
    while True:
        lc = 2 * i + 1
        if lc >= size:
            return
        c = lc
        if lc + 1 < size and _better(hs, hp, np.int64(lc + 1), np.int64(lc)):
            c = lc + 1
        if not _promote(hs, hp, hb, np.int64(c), np.int64(i)):
            return
        i = c


@kernel(helper=True)
def _sift_up(hs, hp, hb, i):
    while i > 0:
        p = (i - 1) // 2
        if not _promote(hs, hp, hb, np.int64(i), np.int64(p)):
            return
        i = p


@kernel(inline="always")
def _take_groups(boff, brows, prio, l):  # noqa: E741
    """Form groups of ℓ rows from the ℓ largest buckets while ℓ buckets are non-empty.

    Returns ``(group, n_groups, gvals, grows, taken, hb, size)``: the group of each row
    taken (−1 otherwise), the value and row of each group's ℓ places, the rows taken per
    bucket and the ``size`` buckets left on the heap ``hb``.
    """
    V = boff.shape[0] - 1
    n = brows.shape[0]
    group = np.full(n, -1, dtype=np.int64)
    hs = np.empty(V, dtype=np.int64)
    hp = np.empty(V, dtype=np.float64)
    hb = np.empty(V, dtype=np.int64)
    size = 0
    for v in range(V):
        c = boff[v + 1] - boff[v]
        if c > 0:
            hs[size] = c
            hp[size] = prio[v]
            hb[size] = v
            size += 1
    for i in range((size - 2) // 2, -1, -1):
        _sift_down(hs, hp, hb, np.int64(i), np.int64(size))
    taken = np.zeros(V, dtype=np.int64)
    G = n // l if l > 0 else 0
    gvals = np.empty(max(G, 1) * l, dtype=np.int64)
    grows = np.empty(max(G, 1) * l, dtype=np.int64)
    g = 0
    popb = np.empty(l, dtype=np.int64)
    pops = np.empty(l, dtype=np.int64)
    popp = np.empty(l, dtype=np.float64)
    while size >= l:
        for t in range(l):
            popb[t] = hb[0]
            pops[t] = hs[0]
            popp[t] = hp[0]
            size -= 1
            if size > 0:
                hs[0] = hs[size]
                hp[0] = hp[size]
                hb[0] = hb[size]
                _sift_down(hs, hp, hb, np.int64(0), np.int64(size))
        for t in range(l):
            v = popb[t]
            row = brows[boff[v] + taken[v]]
            taken[v] += 1
            group[row] = g
            gvals[g * l + t] = v
            grows[g * l + t] = row
            if pops[t] > 1:
                hs[size] = pops[t] - 1
                hp[size] = popp[t]
                hb[size] = v
                _sift_up(hs, hp, hb, np.int64(size))
                size += 1
        g += 1
    return group, g, gvals, grows, taken, hb, size


@kernel(inline="always")
def _match_residuals(gvals, order, l, ng, rval):  # noqa: E741
    """Maximum matching residual row → group without its value (``(gmatch, rmatch)``).

    BFS augmenting paths, groups tried in ``order``: every group receives at most one
    residual row whenever that is possible.
    """
    R = rval.shape[0]
    gmatch = np.full(ng, -1, dtype=np.int64)
    rmatch = np.full(max(R, 1), -1, dtype=np.int64)
    seen = np.zeros(ng, dtype=np.bool_)
    par = np.empty(ng, dtype=np.int64)
    queue = np.empty(max(R, 1), dtype=np.int64)
    for i in range(R):
        for u in range(ng):
            seen[u] = False
        queue[0] = i
        head = 0
        tail = 1
        found = -1
        while head < tail and found < 0:
            r = queue[head]
            head += 1
            for u in range(ng):
                gg = order[u]
                if seen[gg] or _holds(gvals, gg, l, rval[r]):
                    continue
                seen[gg] = True
                par[gg] = r
                if gmatch[gg] < 0:
                    found = gg
                    break
                queue[tail] = gmatch[gg]
                tail += 1
        gg = found
        while gg >= 0:
            r = par[gg]
            prev = rmatch[r]
            gmatch[gg] = r
            rmatch[r] = gg
            if r == i:
                break
            gg = prev
    return gmatch, rmatch


@kernel(inline="always")
def _repair_matching(group, gvals, grows, order, l, ng, rval, gmatch, rmatch):  # noqa: E741
    """Match the residual rows a maximum matching left out by swapping rows (in place)."""
    R = rval.shape[0]
    # Repair (Hall's condition can fail: two leftover values missing from the same single
    # group). For an unmatched residual value v: every unmatched group Y holds v (the
    # matching is maximum) and some group X lacks v (eligibility: v is in at most
    # n/ℓ < G + 1 rows). Swap Y's v-row with an X-row whose value c is not in Y: both
    # groups keep ℓ distinct values, X's residual still fits, and Y now takes v.
    for i in range(R):
        if rmatch[i] >= 0:
            continue
        v = rval[i]
        Y = -1
        for u in range(ng):
            if gmatch[order[u]] < 0:
                Y = order[u]
                break
        X = -1
        for u in range(ng):
            if not _holds(gvals, order[u], l, v):
                X = order[u]
                break
        if Y < 0 or X < 0 or not _holds(gvals, Y, l, v):
            continue
        qy = 0
        while gvals[Y * l + qy] != v:
            qy += 1
        qx = -1
        for q in range(l):
            if not _holds(gvals, Y, l, gvals[X * l + q]):
                qx = q
                break
        if qx < 0:
            continue
        ry = grows[Y * l + qy]
        rx = grows[X * l + qx]
        c = gvals[X * l + qx]
        group[ry] = X
        group[rx] = Y
        gvals[X * l + qx] = v
        grows[X * l + qx] = ry
        gvals[Y * l + qy] = c
        grows[Y * l + qy] = rx
        gmatch[Y] = i
        rmatch[i] = Y


@kernel(inline="always")
def _place_residuals(group, boff, brows, taken, gvals, order, l, ng, rval, rmatch):  # noqa: E741
    """Put every residual row in its matched group (else a group without its value).

    Unmatched rows go to the group without their value with the fewest extra rows;
    returns False when some row has no group without its value.
    """
    R = rval.shape[0]
    extra = np.zeros(ng, dtype=np.int64)
    for i in range(R):
        if rmatch[i] >= 0:
            extra[rmatch[i]] += 1
    for i in range(R):
        best = rmatch[i]
        if best < 0:
            # fewer groups than residual rows: the group without v with the fewest extras
            for u in range(ng):
                gg = order[u]
                if _holds(gvals, gg, l, rval[i]):
                    continue
                if best < 0 or extra[gg] < extra[best]:
                    best = gg
            if best < 0:
                return False
            extra[best] += 1
        v = rval[i]
        group[brows[boff[v] + taken[v]]] = best
        taken[v] += 1
    return True


@kernel
def anatomy_groups(boff, brows, prio, l, gkey):  # noqa: E741
    """Group of every row.

    Parameters
    ----------
    boff : int64 (V+1,)
        Bucket v's rows are ``brows[boff[v]:boff[v+1]]``.
    brows : int64 (n,)
        Row indices grouped by bucket (in random order within a bucket).
    prio : float64 (V,)
        Random tie-break priority of each bucket.
    l : int
        ℓ.
    gkey : float64 (>= n // l,)
        Random keys ordering the groups when residual rows are placed.

    Returns
    -------
    (group, n_groups, status): status 0 ok, 1 a bucket kept more than one residual row
    (input not eligible), 2 a residual row found no group without its value.

    """
    group, ng, gvals, grows, taken, hb, size = _take_groups(boff, brows, prio, l)
    if ng == 0:
        return group, ng, 0
    # residual rows: every remaining bucket must hold exactly one row
    for t in range(size):
        v = hb[t]
        if boff[v + 1] - boff[v] - taken[v] != 1:
            return group, ng, 1
    order = np.argsort(gkey[:ng])
    rval = hb[:size].copy()
    gmatch, rmatch = _match_residuals(gvals, order, l, ng, rval)
    _repair_matching(group, gvals, grows, order, l, ng, rval, gmatch, rmatch)
    if not _place_residuals(group, boff, brows, taken, gvals, order, l, ng, rval, rmatch):
        return group, ng, 2
    return group, ng, 0


@kernel
def _holds(gvals, g, l, v):  # noqa: E741
    """Whether group g's first ℓ values include v."""
    for q in range(l):
        if gvals[g * l + q] == v:
            return True
    return False
