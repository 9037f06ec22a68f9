"""Mondrian kernels: strict multidimensional partitioning on encoded cells.

Rows arrive compressed to *cells* — distinct (QI domain codes, sensitive code) combinations
with a weight (rows with equal QI values can never be separated, so partitioning cells is
exactly partitioning rows). A partition is a contiguous range ``perm[a:b]`` of cell indices.

The split rule (LeFevre, DeWitt, Ramakrishnan, ICDE 2006, strict), shared by every path:

* attributes are tried in order of decreasing *normalized width* (ties: lower attribute
  index first), skipping attributes with a single value in the partition. Width of an
  ordered attribute: (pos[max] − pos[min]) / (pos[D−1] − pos[0]) with ``pos`` the values;
  of a categorical one: (distinct − 1) / (D − 1);
* the cut of an attribute is its weighted lower median: the smallest value v with
  cumulative weight ≥ ⌈W/2⌉ — or, when that is the partition's largest value, the value
  just below it; left = rows with value ≤ v, right = the rest (both non-empty);
* the first attribute whose two halves both satisfy the criterion is split; a partition
  with no such attribute is a final group.

:func:`mondrian_local` runs the whole recursion in compiled code for conjunctions of the
built-in group-local criteria (``profile_ok``); the helpers below serve the Python driver
used for other criteria, with the same rule.

Signatures: the partition permutation ``perm`` is passed *writable* by every caller (the
compiled recursion owns a writable one; the Python driver passes its own array, which the
helpers never modify) so that each helper compiles exactly one specialization.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .generalize import profile_ok


@kernel(helper=True)
def code_range(q, perm, a, b, j):
    """Return the smallest and largest code of attribute ``j`` in partition ``perm[a:b]``."""
    lo = q[j, perm[a]]
    hi = lo
    for r in range(a + 1, b):
        v = q[j, perm[r]]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    return lo, hi


@kernel
def attribute_order(q, w, perm, a, b, pos, pos_off, ordered, gspan):
    """Attributes of partition ``perm[a:b]`` with more than one value, widest first."""
    d = q.shape[0]
    widths = np.zeros(d, dtype=np.float64)
    n_ok = 0
    for j in range(d):
        lo, hi = code_range(q, perm, a, b, j)
        if hi == lo:
            widths[j] = -1.0
            continue
        n_ok += 1
        if ordered[j]:
            span = gspan[j]
            widths[j] = (pos[pos_off[j] + hi] - pos[pos_off[j] + lo]) / span if span > 0 else 0.0
        else:
            vals, _ = attribute_hist(q, perm, a, b, j, w)
            widths[j] = (vals.shape[0] - 1) / gspan[j] if gspan[j] > 0 else 0.0
    out = np.empty(n_ok, dtype=np.int64)
    taken = np.zeros(d, dtype=np.uint8)
    for t in range(n_ok):
        best = -1
        for j in range(d):
            if taken[j] or widths[j] < 0:
                continue
            if best < 0 or widths[j] > widths[best]:
                best = j
        taken[best] = 1
        out[t] = best
    return out


@kernel(helper=True)
def attribute_hist(q, perm, a, b, j, w):
    """Return the distinct codes of attribute ``j`` in ``perm[a:b]`` and their weights.

    Codes are ascending; ``w`` holds the cell weights.
    """
    lo, hi = code_range(q, perm, a, b, j)
    span = hi - lo + 1
    n = b - a
    if span <= 2 * n + 64:
        cnt = np.zeros(span, dtype=np.int64)
        for r in range(a, b):
            c = perm[r]
            cnt[q[j, c] - lo] += w[c]
        d = 0
        for s in range(span):
            if cnt[s] > 0:
                d += 1
        vals = np.empty(d, dtype=np.int64)
        wts = np.empty(d, dtype=np.int64)
        d = 0
        for s in range(span):
            if cnt[s] > 0:
                vals[d] = lo + s
                wts[d] = cnt[s]
                d += 1
        return vals, wts
    col = np.empty(n, dtype=np.int64)
    for r in range(a, b):
        col[r - a] = q[j, perm[r]]
    order = np.argsort(col, kind="mergesort")
    d = 0
    for t in range(n):
        if t == 0 or col[order[t]] != col[order[t - 1]]:
            d += 1
    vals = np.empty(d, dtype=np.int64)
    wts = np.zeros(d, dtype=np.int64)
    d = -1
    for t in range(n):
        i = order[t]
        if t == 0 or col[i] != col[order[t - 1]]:
            d += 1
            vals[d] = col[i]
        wts[d] += w[perm[a + i]]
    return vals, wts


@kernel
def median_cut(q, w, perm, a, b, j):
    """Return the cut value of attribute ``j`` (see the module docstring) and the left weight.

    Returns ``(-1, 0)`` when the attribute has a single value in the partition.
    """
    vals, wts = attribute_hist(q, perm, a, b, j, w)
    d = vals.shape[0]
    if d < 2:
        return -1, 0
    total = 0
    for t in range(d):
        total += wts[t]
    target = (total + 1) // 2
    cum = 0
    i = 0
    for t in range(d):
        cum += wts[t]
        if cum >= target:
            i = t
            break
    if i == d - 1:
        cum -= wts[i]
        i = d - 2
    return vals[i], cum


@kernel
def half_profiles(q, s, w, perm, a, b, j, cut, n_values):
    """Sensitive profiles (codes, counts by count descending) and weights of both halves.

    Returns ``(codes, counts, bounds, weights)``: the left profile is
    ``codes/counts[bounds[0]:bounds[1]]``, the right one ``[bounds[1]:bounds[2]]``.
    """
    left = np.zeros(n_values, dtype=np.int64)
    right = np.zeros(n_values, dtype=np.int64)
    wl = 0
    wr = 0
    for r in range(a, b):
        c = perm[r]
        if q[j, c] <= cut:
            left[s[c]] += w[c]
            wl += w[c]
        else:
            right[s[c]] += w[c]
            wr += w[c]
    codes = np.empty(2 * n_values, dtype=np.int32)
    counts = np.empty(2 * n_values, dtype=np.int64)
    bounds = np.zeros(3, dtype=np.int64)
    nnz = _sorted_profile(left, codes, counts, np.int64(0))
    bounds[1] = nnz
    nnz = _sorted_profile(right, codes, counts, nnz)
    bounds[2] = nnz
    weights = np.empty(2, dtype=np.int64)
    weights[0] = wl
    weights[1] = wr
    return codes[:nnz].copy(), counts[:nnz].copy(), bounds, weights


@kernel(helper=True)
def _sorted_profile(hist, codes, counts, start):
    """Append the non-zero entries of ``hist`` by count descending (ties by code)."""
    nnz = start
    for v in range(hist.shape[0]):
        if hist[v] > 0:
            codes[nnz] = v
            counts[nnz] = hist[v]
            nnz += 1
    d = nnz - start
    if d <= 32:
        for x in range(start + 1, nnz):
            cv = codes[x]
            cc = counts[x]
            p = x
            while p > start and counts[p - 1] < cc:
                codes[p] = codes[p - 1]
                counts[p] = counts[p - 1]
                p -= 1
            codes[p] = cv
            counts[p] = cc
    else:
        neg = np.empty(d, dtype=np.int64)
        for x in range(d):
            neg[x] = -counts[start + x]
        order = np.argsort(neg, kind="mergesort")
        tc = codes[start:nnz].copy()
        tn = counts[start:nnz].copy()
        for x in range(d):
            codes[start + x] = tc[order[x]]
            counts[start + x] = tn[order[x]]
    return nnz


@kernel
def split_segment(q, perm, a, b, j, cut):
    """Return the cells of ``perm[a:b]`` left half first (stable), and the split point."""
    out = np.empty(b - a, dtype=perm.dtype)
    t = 0
    for r in range(a, b):
        if q[j, perm[r]] <= cut:
            out[t] = perm[r]
            t += 1
    mid = t
    for r in range(a, b):
        if q[j, perm[r]] > cut:
            out[t] = perm[r]
            t += 1
    return out, a + mid


@kernel
def mondrian_local(q, s, w, pos, pos_off, ordered, gspan, n_values, kinds, iparams, fparams,
                   qdist, qrank, inv_q):
    """Strict Mondrian with a conjunction of built-in local criteria, fully compiled.

    Returns ``(group, n_groups, n_splits)``: the group (in depth-first, left-first order) of
    every cell.
    """
    m = q.shape[1]
    perm = np.arange(m).astype(np.int64)
    group = np.full(m, -1, dtype=np.int32)
    dense = np.zeros(n_values, dtype=np.float64)
    stack_a = np.empty(64, dtype=np.int64)
    stack_b = np.empty(64, dtype=np.int64)
    top = 0
    stack_a[0] = 0
    stack_b[0] = m
    top = 1
    n_groups = 0
    n_splits = 0
    while top > 0:
        top -= 1
        a = stack_a[top]
        b = stack_b[top]
        order = attribute_order(q, w, perm, a, b, pos, pos_off, ordered, gspan)
        done = False
        for t in range(order.shape[0]):
            j = order[t]
            cut, wl = median_cut(q, w, perm, a, b, j)
            if cut < 0:
                continue
            codes, counts, bounds, weights = half_profiles(q, s, w, perm, a, b, j, cut,
                                                           n_values)
            if not profile_ok(codes, counts, bounds[0], bounds[1], weights[0], kinds, iparams,
                              fparams, qdist, qrank, inv_q, dense):
                continue
            if not profile_ok(codes, counts, bounds[1], bounds[2], weights[1], kinds, iparams,
                              fparams, qdist, qrank, inv_q, dense):
                continue
            mid = split_in_place(q, perm, a, b, j, cut)
            if top + 2 > stack_a.shape[0]:
                na = np.empty(2 * stack_a.shape[0], dtype=np.int64)
                nb = np.empty(2 * stack_b.shape[0], dtype=np.int64)
                for u in range(top):  # a loop: no slice-assignment error formatter to compile
                    na[u] = stack_a[u]
                    nb[u] = stack_b[u]
                stack_a = na
                stack_b = nb
            stack_a[top] = mid
            stack_b[top] = b
            stack_a[top + 1] = a
            stack_b[top + 1] = mid
            top += 2
            n_splits += 1
            done = True
            break
        if not done:
            n_groups = close_group(group, perm, a, b, n_groups)
    return group, n_groups, n_splits


@kernel(helper=True)
def split_in_place(q, perm, a, b, j, cut):
    """Reorder ``perm[a:b]`` left half first (:func:`split_segment`); return the split point."""
    seg, mid = split_segment(q, perm, a, b, j, cut)
    for r in range(a, b):
        perm[r] = seg[r - a]
    return mid


@kernel(inline="always")  # small: inlined, any argument types
def close_group(group, perm, a, b, g):
    """Assign the cells ``perm[a:b]`` to group g; return the next group number."""
    for r in range(a, b):
        group[perm[r]] = g
    return g + 1


@kernel
def group_ranges(q, group, n_groups):
    """Min and max domain code of every attribute in every group: two (n_groups, d) arrays."""
    d = q.shape[0]
    lo = np.full((n_groups, d), np.iinfo(np.int32).max, dtype=np.int32)
    hi = np.full((n_groups, d), -1, dtype=np.int32)
    for c in range(q.shape[1]):
        g = group[c]
        for j in range(d):
            v = q[j, c]
            if v < lo[g, j]:
                lo[g, j] = v
            if v > hi[g, j]:
                hi[g, j] = v
    return lo, hi
