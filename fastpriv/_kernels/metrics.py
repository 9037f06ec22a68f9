"""Utility-metric kernels: count queries over a trie of compressed cells, group spreads.

Queries are 0/1 masks over each attribute's domain codes: ``masks[q, off[a] + v]`` says
whether value ``v`` of QI attribute ``a`` is in query ``q``'s predicate set (attributes a
query does not constrain have an all-ones mask) and ``smask[q, s]`` the same for the
sensitive attribute.

Rows are compressed to distinct cells and arranged as a **trie**: level ℓ holds the
distinct prefixes of length ℓ+1 of the sorted cells (``node_code`` per node, children
``child_lo[i]:child_hi[i]`` on the next level; the last level's nodes are the cells, with
weight ``w``). Each level is one column: a QI attribute (its domain code, or a generalized
code whose member values are known), the sensitive value, or a group id. A query walks the
trie multiplying one factor per level and skips every subtree whose factor is 0, so it
touches only the part of the table its predicates can reach. Queries are independent and
run in chunks on threads (:func:`fastpriv._threads.run_chunks`), each writing its own output
slots.

Level kinds (``lev_kind``): 0 = QI domain code, factor ``masks[q, off[a] + code]``;
1 = generalized QI code, factor |gen ∩ b_A| / |gen| from the member CSR; 2 = sensitive
value, factor ``smask[q, code]``; 3 = group id (bucketized release), factor
#{v ∈ X_g : v ∈ b_S} / n_g from the group's profile (computed on first use per query).
A group's cells are added up first (their weights times the other factors, 0 or 1 in a
bucketized release) and multiplied by the group's factor once (hits_g · #{v ∈ X_g : v ∈
b_S} / n_g, one division), so an estimate whose terms are whole numbers is exact.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .._threads import chunk_bounds, current_threads, run_chunks


def trie_sums(node_code, lev_start, child_lo, child_hi, w, lev_kind, lev_attr, masks, off,
              smask, gindptr, gmem, gip_off, gmem_off, frac_off, n_frac, gp_indptr, gp_codes,
              gp_counts, gp_sizes):
    """Σ over cells of w · ∏_levels factor, for every query (see the module docstring).

    Chunks of queries run :func:`trie_sums_range` (serial, ``nogil``) on
    :func:`fastpriv._threads.run_chunks`.
    """
    n_q = masks.shape[0]
    out = np.zeros(n_q, dtype=np.float64)
    n_chunks = min(n_q, 4 * current_threads())
    run_chunks(lambda c: trie_sums_range(node_code, lev_start, child_lo, child_hi, w, lev_kind,
                                         lev_attr, masks, off, smask, gindptr, gmem, gip_off,
                                         gmem_off, frac_off, n_frac, gp_indptr, gp_codes,
                                         gp_counts, gp_sizes, *chunk_bounds(n_q, n_chunks, c),
                                         out), n_chunks)
    return out


@kernel
def trie_sums_range(node_code, lev_start, child_lo, child_hi, w, lev_kind, lev_attr, masks,
                    off, smask, gindptr, gmem, gip_off, gmem_off, frac_off, n_frac, gp_indptr,
                    gp_codes, gp_counts, gp_sizes, q0, q1, out):
    """Compute queries ``[q0, q1)`` of :func:`trie_sums` into ``out``."""
    L = lev_start.shape[0] - 1
    d_gen = gip_off.shape[0] - 1
    n_groups = gp_sizes.shape[0]
    glev = -1                   # the group level (bucketized), if any
    for lev in range(L):
        if lev_kind[lev] == 3:
            glev = lev
    for q in range(q0, q1):
        frac = np.zeros(n_frac, dtype=np.float64)
        for a in range(d_gen):
            n_g = gip_off[a + 1] - gip_off[a] - 1
            if n_g <= 0:
                continue
            for g in range(n_g):
                lo = gindptr[gip_off[a] + g]
                hi = gindptr[gip_off[a] + g + 1]
                hit = 0
                for p in range(lo, hi):
                    hit += masks[q, off[a] + gmem[gmem_off[a] + p]]
                frac[frac_off[a] + g] = hit / (hi - lo) if hi > lo else 0.0
        memo = np.full(n_groups, -1.0)
        ghit = np.zeros(n_groups, dtype=np.float64)
        cur = np.empty(L, dtype=np.int64)
        end = np.empty(L, dtype=np.int64)
        prod = np.empty(L + 1, dtype=np.float64)
        prod[0] = 1.0
        cur[0] = lev_start[0]
        end[0] = lev_start[1]
        lev = 0
        est = 0.0
        while lev >= 0:
            if cur[lev] >= end[lev]:
                lev -= 1
                if lev >= 0:
                    cur[lev] += 1
                continue
            node = cur[lev]
            code = node_code[node]
            kind = lev_kind[lev]
            if kind == 0:
                f = 1.0 * masks[q, off[lev_attr[lev]] + code]
            elif kind == 1:
                f = frac[frac_off[lev_attr[lev]] + code]
            elif kind == 2:
                f = 1.0 * smask[q, code]
            else:
                if memo[code] < 0.0:
                    sv = 0
                    for e in range(gp_indptr[code], gp_indptr[code + 1]):
                        if smask[q, gp_codes[e]]:
                            sv += gp_counts[e]
                    memo[code] = sv
                f = memo[code] / gp_sizes[code]
            if f == 0.0:
                cur[lev] += 1
                continue
            # the group's factor is applied once per group, after its cells are added up
            p = prod[lev] * (1.0 if kind == 3 else f)
            if lev == L - 1 and glev >= 0:
                ghit[node_code[cur[glev]]] += p * w[node - lev_start[L - 1]]
                cur[lev] += 1
            elif lev == L - 1:
                est += p * w[node - lev_start[L - 1]]
                cur[lev] += 1
            else:
                prod[lev + 1] = p
                cur[lev + 1] = child_lo[node]
                end[lev + 1] = child_hi[node]
                lev += 1
        for g in range(n_groups):
            if ghit[g] > 0.0:
                est += ghit[g] * memo[g] / gp_sizes[g]
        out[q] = est


@kernel
def group_spread(group, f, n_groups):
    """Compute max − min of every column of ``f`` (rows × values) within each group.

    Rows with ``group < 0`` are ignored. Returns ``(n_groups, n_values)`` float64; NaN
    entries of ``f`` are skipped (a group with no finite entry gets NaN).
    """
    n_v = f.shape[1]
    lo = np.full((n_groups, n_v), np.inf)
    hi = np.full((n_groups, n_v), -np.inf)
    for i in range(group.shape[0]):
        g = group[i]
        if g < 0:
            continue
        for v in range(n_v):
            x = f[i, v]
            if x != x:
                continue
            if x < lo[g, v]:
                lo[g, v] = x
            if x > hi[g, v]:
                hi[g, v] = x
    out = np.empty((n_groups, n_v), dtype=np.float64)
    for g in range(n_groups):
        for v in range(n_v):
            out[g, v] = hi[g, v] - lo[g, v] if hi[g, v] >= lo[g, v] else np.nan
    return out
