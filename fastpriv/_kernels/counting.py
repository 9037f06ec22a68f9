"""Encoding and counting kernels behind :class:`fastpriv.Release`.

The central output is the *frequency profile* of a release in CSR form: for group g the
slice ``indptr[g]:indptr[g+1]`` of ``codes``/``counts`` lists the sensitive values present in
g with their counts, sorted by count descending (ties by code ascending). Every model reads
this form: the top counts n_g(s^0) ≥ n_g(s^1) ≥ … are a prefix of each slice.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel
def dense_encode(x, xmin, span):
    """Encode integers ``x`` (all in [xmin, xmin+span)) to dense codes in sorted order.

    Returns ``(codes, uniques)``: ``codes[i]`` is the rank of ``x[i]`` among the distinct
    values, ``uniques`` the distinct values ascending. O(n + span).
    """
    n = x.shape[0]
    seen = np.zeros(span, dtype=np.uint8)
    for i in range(n):
        seen[x[i] - xmin] = 1
    rank = np.empty(span, dtype=np.int32)
    r = 0
    for j in range(span):
        if seen[j]:
            rank[j] = r
            r += 1
        else:
            rank[j] = -1
    uniques = np.empty(r, dtype=np.int64)
    for j in range(span):
        if seen[j]:
            uniques[rank[j]] = xmin + j
    codes = np.empty(n, dtype=np.int32)
    for i in range(n):
        codes[i] = rank[x[i] - xmin]
    return codes, uniques


@kernel
def combine_codes(a, b, n_b):
    """Mixed-radix key ``a * n_b + b`` (int64) of two code columns; order = lexicographic."""
    n = a.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = np.int64(a[i]) * n_b + b[i]
    return out


@kernel
def group_sizes(group, weights, n_groups):
    """Sum of ``weights`` per group (row counts when ``weights`` is empty)."""
    out = np.zeros(n_groups, dtype=np.int64)
    unit = weights.shape[0] == 0
    for i in range(group.shape[0]):
        out[group[i]] += 1 if unit else weights[i]
    return out


@kernel
def group_order(group, n_groups):
    """Stable counting sort of rows by group.

    Returns ``(offsets, order)``: rows of group g are ``order[offsets[g]:offsets[g+1]]`` in
    input order. O(n + n_groups).
    """
    n = group.shape[0]
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(n):
        offsets[group[i] + 1] += 1
    for g in range(n_groups):
        offsets[g + 1] += offsets[g]
    pos = offsets[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = group[i]
        order[pos[g]] = i
        pos[g] += 1
    return offsets, order


@kernel
def first_index(group, n_groups):
    """Index of the first row of each group (``-1`` for a group with no row)."""
    out = np.full(n_groups, -1, dtype=np.int64)
    for i in range(group.shape[0]):
        g = group[i]
        if out[g] < 0:
            out[g] = i
    return out


@kernel
def _sort_profile(seen, d, scratch, base):
    """Order ``seen[:d]`` by (count desc, code asc); the count of v is ``scratch[base + v]``."""
    if d <= 32:  # insertion sort: profiles are short
        for a in range(d):
            va = seen[a]
            ca = scratch[base + va]
            b = a - 1
            while b >= 0 and (scratch[base + seen[b]] < ca
                              or (scratch[base + seen[b]] == ca and seen[b] > va)):
                seen[b + 1] = seen[b]
                b -= 1
            seen[b + 1] = va
    else:
        byc = np.sort(seen[:d])
        neg = np.empty(d, dtype=np.int64)
        for a in range(d):
            neg[a] = -scratch[base + byc[a]]
        perm = np.argsort(neg, kind="mergesort")  # stable: ties stay by code
        for a in range(d):
            seen[a] = byc[perm[a]]


#: Use a dense (group × value) count matrix up to this many cells.
DENSE_CELLS = 1 << 24


@kernel
def count_pairs(group, value, weights, n_groups, n_values, dense_cells):
    """Frequency profiles of (group, value) pairs, in CSR form sorted by count descending.

    Parameters
    ----------
    group, value : int32 arrays
        Group code and value code per row (``0 <= group < n_groups``,
        ``0 <= value < n_values``).
    weights : int64 array
        Count per row (the ``from_counts`` form), or empty for one per row. Zero weights
        are dropped from the profile.
    dense_cells : int
        Largest (group × value) matrix counted densely (pass :data:`DENSE_CELLS`; 0 forces
        the sparse path).

    Returns
    -------
    indptr : int64 (n_groups + 1,)
    codes : int32 (nnz,)
        Value codes; within a group by count descending, ties by code ascending.
    counts : int64 (nnz,)

    Notes
    -----
    Two strategies, same output. When the (group × value) matrix is small
    (≤ ``dense_cells`` cells) rows are counted straight into it in one sequential pass.
    Otherwise value codes are bucketed by group with a counting sort and each group is
    counted in a scratch array of size ``n_values`` reset by touching only the values seen:
    O(n + n_groups + n_values + Σ_g d_g log d_g) time and O(n + n_values) memory, whatever
    the number of groups.
    """
    n = group.shape[0]
    unit = weights.shape[0] == 0
    indptr = np.zeros(n_groups + 1, dtype=np.int64)
    seen = np.empty(n_values, dtype=np.int32)
    if n_groups * n_values <= dense_cells:
        mat = np.zeros(n_groups * n_values, dtype=np.int64)
        if unit:
            for i in range(n):
                mat[np.int64(group[i]) * n_values + value[i]] += 1
        else:
            for i in range(n):
                mat[np.int64(group[i]) * n_values + value[i]] += weights[i]
        nnz = 0
        for j in range(mat.shape[0]):
            if mat[j] != 0:
                nnz += 1
        codes = np.empty(nnz, dtype=np.int32)
        counts = np.empty(nnz, dtype=np.int64)
        k = 0
        for g in range(n_groups):
            base = np.int64(g) * n_values
            d = 0
            for v in range(n_values):
                if mat[base + v] != 0:
                    seen[d] = v
                    d += 1
            _sort_profile(seen, np.int64(d), mat, np.int64(base))
            for a in range(d):
                codes[k] = seen[a]
                counts[k] = mat[base + seen[a]]
                k += 1
            indptr[g + 1] = k
        return indptr, codes, counts

    start = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(n):
        start[group[i] + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    pos = start[:-1].copy()
    bvals = np.empty(n, dtype=np.int32)  # value codes, bucketed by group
    bw = np.empty(0 if unit else n, dtype=np.int64)
    for i in range(n):
        g = group[i]
        bvals[pos[g]] = value[i]
        if not unit:
            bw[pos[g]] = weights[i]
        pos[g] += 1

    scratch = np.zeros(n_values, dtype=np.int64)
    codes = np.empty(n, dtype=np.int32)
    counts = np.empty(n, dtype=np.int64)
    nnz = 0
    for g in range(n_groups):
        d = 0
        for p in range(start[g], start[g + 1]):
            w = 1 if unit else bw[p]
            if w == 0:
                continue
            v = bvals[p]
            if scratch[v] == 0:
                seen[d] = v
                d += 1
            scratch[v] += w
        _sort_profile(seen, np.int64(d), scratch, np.int64(0))
        for a in range(d):
            v = seen[a]
            codes[nnz] = v
            counts[nnz] = scratch[v]
            nnz += 1
            scratch[v] = 0
        indptr[g + 1] = nnz
    return indptr, codes[:nnz].copy(), counts[:nnz].copy()
