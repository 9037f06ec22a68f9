"""Per-group kernels of the classical models (baselines.md), over the CSR frequency profile.

All take ``indptr`` (int64, G+1), ``codes`` (int32) and ``counts`` (int64) of a
:class:`~fastpriv.Release` — counts sorted descending within each group — and return one
float64 value per group; the API reduces them (min/max) and reports violating groups.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel


@kernel
def group_entropy(indptr, counts):
    """H_g = −Σ_x p_x log p_x with p_x = #x_g / Σ_x #x_g (natural log)."""
    n_groups = indptr.shape[0] - 1
    out = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        a, b = indptr[g], indptr[g + 1]
        total = 0
        for i in range(a, b):
            total += counts[i]
        if total == 0:
            out[g] = 0.0
            continue
        # H = log N − (1/N) Σ c log c : one log per entry, no p_x round-off on tiny p.
        s = 0.0
        for i in range(a, b):
            c = counts[i]
            s += c * math.log(c)
        h = math.log(total) - s / total
        out[g] = h if h > 0.0 else 0.0
    return out


@kernel
def recursive_ratio(indptr, counts, l):
    """r_1 / (r_l + … + r_m) per group; +inf when the group has fewer than ``l`` values."""
    n_groups = indptr.shape[0] - 1
    out = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        a, b = indptr[g], indptr[g + 1]
        if b - a < l:
            out[g] = np.inf
            continue
        tail = 0
        for i in range(a + l - 1, b):
            tail += counts[i]
        out[g] = counts[a] / tail
    return out


@kernel
def emd_equal(indptr, codes, counts, q):
    """EMD with equal ground distance: ½ Σ_x |P_g(x) − Q(x)| per group.

    Values absent from g contribute Q(x); their sum is 1 − Σ_{x∈g} Q(x), so the cost is
    O(d_g) per group, not O(|domain|).
    """
    n_groups = indptr.shape[0] - 1
    out = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        a, b = indptr[g], indptr[g + 1]
        total = 0
        for i in range(a, b):
            total += counts[i]
        s = 0.0
        qin = 0.0
        for i in range(a, b):
            qx = q[codes[i]]
            s += abs(counts[i] / total - qx)
            qin += qx
        rest = 1.0 - qin
        out[g] = 0.5 * (s + (rest if rest > 0.0 else 0.0))
    return out


@kernel
def emd_ordered(indptr, codes, counts, q, rank):
    """Ordered-distance EMD: (1/(m−1)) Σ_{i=1..m} |Σ_{j≤i} (P_g(j) − Q(j))| per group.

    ``rank[code]`` is the position of each value in the attribute's order (m = len(q)).
    Uses a dense scratch of size m per group: O(G · m).
    """
    n_groups = indptr.shape[0] - 1
    m = q.shape[0]
    qs = np.empty(m, dtype=np.float64)
    for c in range(m):
        qs[rank[c]] = q[c]
    p = np.zeros(m, dtype=np.float64)
    out = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        a, b = indptr[g], indptr[g + 1]
        total = 0
        for i in range(a, b):
            total += counts[i]
        for i in range(a, b):
            p[rank[codes[i]]] = counts[i] / total
        run = 0.0
        acc = 0.0
        for j in range(m):
            run += p[j] - qs[j]
            acc += abs(run)
        for i in range(a, b):
            p[rank[codes[i]]] = 0.0
        out[g] = acc / (m - 1) if m > 1 else 0.0
    return out


@kernel
def likeness(indptr, codes, counts, q):
    """Per group: basic β = max_x (P_g(x) − Q(x)) / Q(x) and δ = max_{x∈g} |log(P_g(x)/Q(x))|.

    Returns ``(beta, delta)``. Values absent from g give (0 − Q)/Q = −1 for β, never the max
    unless every present value also lies below Q (impossible: P_g sums to 1); δ is taken over
    the values present in g (as common Python checkers do; an absent value would make δ
    infinite under the strict definition of Brickell & Shmatikov).
    """
    n_groups = indptr.shape[0] - 1
    beta = np.empty(n_groups, dtype=np.float64)
    delta = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        a, b = indptr[g], indptr[g + 1]
        total = 0
        for i in range(a, b):
            total += counts[i]
        bmax = -1.0
        # |log r| is largest at the largest or the smallest ratio r = P/Q: one log per group
        rmax = 1.0
        rmin = 1.0
        for i in range(a, b):
            qx = q[codes[i]]
            px = counts[i] / total
            r = (px - qx) / qx
            if r > bmax:
                bmax = r
            ratio = px / qx
            if ratio > rmax:
                rmax = ratio
            if ratio < rmin:
                rmin = ratio
        beta[g] = bmax
        delta[g] = max(math.log(rmax), -math.log(rmin))
    return beta, delta
