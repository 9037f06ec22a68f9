"""Generalization kernels: regroup encoded rows, and test privacy criteria on group profiles.

Regrouping (lattice search, compression)
----------------------------------------
A full-domain generalization maps every quasi-identifier column to one level of its
hierarchy. Columns arrive as dense *domain codes* (``qcodes[a, i]``, int32) and every
hierarchy level as a gather table ``maps[off + code] -> generalized code`` (flat int32 with
one offset per chosen level). :func:`regroup` combines the generalized codes of a row into a
mixed-radix key and ranks the keys densely, so a node check is one gather + one counting
pass — no Arrow round trip and no hashing for key spaces up to ``dense_limit`` slots.

Criterion tests (lattice search and Mondrian)
---------------------------------------------
Built-in *group-local* criteria (a release satisfies them iff every group does) are coded
as rows of three arrays ``kinds`` / ``iparams`` / ``fparams`` (a conjunction):

=====  =================================  ==========================================
kind   criterion                           a group passes iff
=====  =================================  ==========================================
0      k-anonymity (ip = k)                n_g ≥ k
1      distinct ℓ-diversity (ip = ℓ)       distinct values ≥ ℓ
2      entropy ℓ-diversity (fp = ℓ)        H_g ≥ log ℓ − 1e-12
3      recursive (c,ℓ) (ip = ℓ, c)         ≥ ℓ values and r_1 < c·(r_ℓ + … + r_m)
4      t-closeness, equal (fp = t)         ½ Σ_x |P_g(x) − Q(x)| ≤ t + 1e-12
5      t-closeness, ordered (fp = t)       (1/(m−1)) Σ_i |Σ_{j≤i} (P_g − Q)| ≤ t + 1e-12
6      (c,k)-safety, negated atoms (ip=k)  r_1 < c·(n_g − r_2 − … − r_{k+1})
7      (α,k)-anonymity's α                 r_1 ≤ α·N_g
=====  =================================  ==========================================

(r_i = i-th largest count, N_g = Σ counts, n_g = individuals.) ``iparams`` has three
columns: the integer parameter, and the threshold (c or α) as an exact ratio num/den when
it has one small enough (den > 0; then the comparison is in exact integer arithmetic, so a
ratio equal to the threshold is decided exactly), else den = 0 and ``fparams`` is used.
The 1e-12 tolerances make exact ties of the real-valued criteria (a uniform group at ℓ, an
EMD equal to t) count as satisfying despite round-off.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .classic import _emd_ordered_g

K_ANON = 0
DISTINCT_L = 1
ENTROPY_L = 2
RECURSIVE_CL = 3
T_EQUAL = 4
T_ORDERED = 5
CK_NEGATIONS = 6
ALPHA = 7

TOL = 1e-12


@kernel
def regroup(qcodes, maps, offsets, cards, dense_limit):
    """Group rows by their generalized code tuple.

    Parameters
    ----------
    qcodes : int32 (d, m)
        Domain code of each row for each attribute.
    maps : int32 (total,)
        Concatenated gather tables; attribute ``a`` uses ``maps[offsets[a] + code]``.
    offsets : int64 (d,)
        Start of each attribute's gather table (for the chosen level) in ``maps``.
    cards : int64 (d,)
        Number of generalized codes of each chosen level (the radix of the key).
    dense_limit : int
        Largest key space ranked by direct addressing; larger ones are sorted.

    Returns
    -------
    group : int32 (m,)
        Dense group index per row, in lexicographic order of the generalized tuples.
    n_groups : int

    """
    d = qcodes.shape[0]
    m = qcodes.shape[1]
    space = 1
    overflow = False
    for a in range(d):
        if space > (1 << 62) // max(cards[a], 1):
            overflow = True
        space *= max(cards[a], 1)
    key = np.zeros(m, dtype=np.int64)
    if not overflow:
        for i in range(m):
            k = 0
            for a in range(d):
                k = k * cards[a] + maps[offsets[a] + qcodes[a, i]]
            key[i] = k
    group = np.empty(m, dtype=np.int32)
    if overflow:
        # rank rows by the tuple itself (lexicographic sort of generalized codes)
        gen = np.empty((m, d), dtype=np.int64)
        for i in range(m):
            for a in range(d):
                gen[i, a] = maps[offsets[a] + qcodes[a, i]]
        order = np.arange(m)
        for a in range(d - 1, -1, -1):
            col = np.empty(m, dtype=np.int64)
            for i in range(m):
                col[i] = gen[order[i], a]
            sub = np.argsort(col, kind="mergesort")
            order = order[sub]
        g = -1
        for r in range(m):
            i = order[r]
            if r == 0:
                g = 0
            else:
                j = order[r - 1]
                same = True
                for a in range(d):
                    if gen[i, a] != gen[j, a]:
                        same = False
                        break
                if not same:
                    g += 1
            group[i] = g
        return group, g + 1
    if space <= dense_limit:
        rank = np.zeros(space, dtype=np.int32)
        for i in range(m):
            rank[key[i]] = 1
        g = 0
        for s in range(space):
            if rank[s]:
                rank[s] = g
                g += 1
        for i in range(m):
            group[i] = rank[key[i]]
        return group, g
    order = np.argsort(key, kind="mergesort")
    g = -1
    prev = np.int64(-1)
    for r in range(m):
        i = order[r]
        if r == 0 or key[i] != prev:
            g += 1
            prev = key[i]
        group[i] = g
    return group, g + 1


@kernel
def gather_codes(codes, table):
    """``table[codes]`` as int32 (one generalization step of a column)."""
    n = codes.shape[0]
    out = np.empty(n, dtype=np.int32)
    for i in range(n):
        out[i] = table[codes[i]]
    return out


@kernel
def weighted_first(group, weights, n_groups):
    """Return the summed weight (row count if ``weights`` is empty) and first row per group."""
    size = np.zeros(n_groups, dtype=np.int64)
    first = np.full(n_groups, -1, dtype=np.int64)
    unit = weights.shape[0] == 0
    for i in range(group.shape[0]):
        g = group[i]
        size[g] += 1 if unit else weights[i]
        if first[g] < 0:
            first[g] = i
    return size, first


@kernel
def groups_ok(indptr, codes, counts, sizes, kinds, iparams, fparams, q, qrank, inv_q):
    """Per-group pass/fail of a conjunction of local criteria over a CSR profile.

    ``q`` is the reference distribution by code (t-closeness), ``qrank`` the rank of each
    code in the attribute order and ``inv_q`` the distribution in that order (ordered
    t-closeness). Returns a uint8 array (1 = passes).
    """
    n_groups = indptr.shape[0] - 1
    out = np.zeros(n_groups, dtype=np.uint8)
    dense = np.zeros(q.shape[0], dtype=np.float64)
    # writable copies: profile_ok is also called by Mondrian on arrays it built itself, and
    # Numba types read-only and writable arrays differently (one specialization each).
    wcodes = codes.copy()
    wcounts = counts.copy()
    for g in range(n_groups):
        if profile_ok(wcodes, wcounts, indptr[g], indptr[g + 1], sizes[g], kinds, iparams,
                      fparams, q, qrank, inv_q, dense):
            out[g] = 1
    return out


@kernel
def profile_ok(codes, counts, a, b, n_indiv, kinds, iparams, fparams, q, qrank, inv_q,
                       dense):
    """Return whether one group profile passes every criterion row.

    The profile is ``codes/counts[a:b]``, counts descending.

    ``q`` is the reference distribution by code, ``inv_q`` the same in attribute-rank order
    (``inv_q[qrank[c]] = q[c]``), ``dense`` a zeroed float64 scratch of length ``len(q)``
    (left zeroed on return).
    """
    total = np.int64(0)
    for i in range(a, b):
        total += counts[i]
    d = b - a
    for r in range(kinds.shape[0]):
        kind = kinds[r]
        if kind == 0:
            if n_indiv < iparams[r, 0]:
                return False
        elif kind == 1:
            if d < iparams[r, 0]:
                return False
        elif kind == 2:
            if total == 0:
                return False
            s = 0.0
            for i in range(a, b):
                c = counts[i]
                s += c * math.log(c)
            h = math.log(total) - s / total
            if h < math.log(fparams[r]) - 1e-12:
                return False
        elif kind == 3:
            l = iparams[r, 0]
            if d < l:
                return False
            tail = np.int64(0)
            for i in range(a + l - 1, b):
                tail += counts[i]
            if not _less(counts[a], tail, iparams[r, 1], iparams[r, 2], fparams[r]):
                return False
        elif kind == 4:
            if total == 0:
                return False
            s = 0.0
            for i in range(a, b):
                qx = q[codes[i]]
                s += abs(counts[i] / total - qx) - qx
            emd = 0.5 * (1.0 + s)
            if emd > fparams[r] + 1e-12:
                return False
        elif kind == 5:
            if total == 0:
                return False
            if q.shape[0] > 1:
                emd = _emd_ordered_g(codes, counts, a, b, total, qrank, inv_q, dense)
                if emd > fparams[r] + 1e-12:
                    return False
        elif kind == 6:
            k = iparams[r, 0]
            if d == 0:
                return False
            den = n_indiv
            for i in range(a + 1, min(b, a + 1 + k)):
                den -= counts[i]
            if not _less(counts[a], den, iparams[r, 1], iparams[r, 2], fparams[r]):
                return False
        elif kind == 7:
            if total == 0:
                return False
            if not _at_most(counts[a], total, iparams[r, 1], iparams[r, 2], fparams[r]):
                return False
    return True


@kernel(helper=True)
def _less(x, y, num, den, c):
    """Test x < c·y, exactly (x·den < num·y) when the threshold is a ratio num/den (den > 0)."""
    if den > 0:
        return x * den < num * y
    return x < c * y


@kernel(helper=True)
def _at_most(x, y, num, den, c):
    """Test x ≤ c·y, exactly when the threshold is a ratio num/den (den > 0)."""
    if den > 0:
        return x * den <= num * y
    return x <= c * y
