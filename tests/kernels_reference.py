"""Kernels that only the tests and benchmarks run, kept out of the installed package.

They are compiled (through :func:`fastpriv._jit.kernel`, like every kernel) only by the
tests that compare the fast paths against them, so they never count in a user's cold start:

* ``reference_min_ratio`` / ``reference_m1`` — the paper's MINIMIZE1 recursion of
  (c,k)-safety (Martin et al., ICDE 2007), the reference of
  :mod:`fastpriv._kernels.ck_safety`'s fast path;
* ``binary_log_en`` — log E_n(f) of one segment through the elementary symmetric
  polynomials E_0..E_n, computed by the plain recursion (``esp_coefficients``, rescaled,
  and its log-space twin ``esp_log_coefficients``), the oracle of
  :mod:`fastpriv._kernels.possible_worlds`' prefix/suffix algorithm.
"""

from __future__ import annotations

import math

import numpy as np

from fastpriv._jit import kernel
from fastpriv._kernels.possible_worlds import _DEN_MIN as DEN_MIN
from fastpriv._kernels.possible_worlds import _RESCALE, _lae, _log0

INF = np.inf


@kernel
def _m1_paper(n, pref, H, memo, out_row):
    """Tabulate the paper's MINIMIZE1(b, i, k̂_i, k̂) as memo[i, kcap, rem]; O(H⁴)."""
    L = H if H < n else n
    for kc in range(H + 1):
        memo[L, kc, 0] = 1.0
        for rem in range(1, H + 1):
            memo[L, kc, rem] = INF
    for i in range(L - 1, -1, -1):
        ni = n - i
        for kc in range(H + 1):
            memo[i, kc, 0] = 1.0
            for rem in range(1, H - i + 1):
                pmin = INF
                top = kc if kc < rem else rem
                for ki in range(1, top + 1):
                    num = ni - pref[ki]
                    f = num / ni if num > 0 else 0.0
                    sub = memo[i + 1, ki, rem - ki]
                    if sub < INF:
                        p = f * sub
                        if p < pmin:
                            pmin = p
                memo[i, kc, rem] = pmin
    out_row[0] = 1.0
    for h in range(1, H + 1):
        out_row[h] = memo[0, h, h]


@kernel
def reference_m1(indptr, counts, sizes, H):
    """M1(b, h), h = 0..H, for every bucket with the paper's recursion (no sharing)."""
    G = sizes.shape[0]
    out = np.empty((G, H + 1))
    memo = np.empty((H + 2, H + 1, H + 1))
    pref = np.zeros(H + 1, dtype=np.int64)
    for g in range(G):
        a, b = indptr[g], indptr[g + 1]
        for m in range(1, H + 1):
            j = a + m - 1
            pref[m] = pref[m - 1] + (counts[j] if j < b else 0)
        _m1_paper(sizes[g], pref, H, memo, out[g])
    return out


@kernel
def reference_min_ratio(indptr, counts, sizes, K):
    """R*(t) for t = 0..K: paper MINIMIZE1 per bucket + O(|B|·K²) knapsack over all buckets.

    U[t] (no A placed yet) and V[t] (A placed) are the minimal products over the buckets
    seen so far using exactly t antecedent atoms; M1 is non-increasing in h, so exactly t
    equals at most t. Returns V.
    """
    H = K + 1
    G = sizes.shape[0]
    memo = np.empty((H + 2, H + 1, H + 1))
    pref = np.zeros(H + 1, dtype=np.int64)
    u = np.empty(H + 1)
    U = np.full(K + 1, INF)
    V = np.full(K + 1, INF)
    U[0] = 1.0
    for g in range(G):
        a, b = indptr[g], indptr[g + 1]
        for m in range(1, H + 1):
            j = a + m - 1
            pref[m] = pref[m - 1] + (counts[j] if j < b else 0)
        _m1_paper(sizes[g], pref, H, memo, u)
        ratio = sizes[g] / counts[a]
        for t in range(K, -1, -1):
            nu = INF
            nv = INF
            for h in range(t + 1):
                x = U[t - h]
                if x < INF:
                    c = x * u[h]
                    if c < nu:
                        nu = c
                    c = x * (ratio * u[h + 1])
                    if c < nv:
                        nv = c
                y = V[t - h]
                if y < INF:
                    c = y * u[h]
                    if c < nv:
                        nv = c
            U[t] = nu
            V[t] = nv
    return V


@kernel(helper=True)
def esp_step(c, top, m, stay, up):
    """Multiply the truncated polynomial c[0..m] by (stay + up·z) in place."""
    new_top = top + 1
    if new_top > m:
        new_top = m
    for d in range(new_top, 0, -1):
        c[d] = stay * c[d] + up * c[d - 1]
    c[0] = stay * c[0]
    return new_top


@kernel
def esp_coefficients(fseg, N, n, out):
    """E_0..E_n of the first N factors, rescaled into ``out[0:n+1]``; returns log scale."""
    for d in range(n + 1):
        out[d] = 0.0
    out[0] = 1.0
    top = np.int64(0)
    lscale = 0.0
    for i in range(N):
        fi = fseg[i]
        top = esp_step(out, top, n, 1.0 - fi, fi)
        mx = 0.0
        for d in range(top + 1):
            if out[d] > mx:
                mx = out[d]
        if mx == 0.0:
            return -np.inf
        if mx < _RESCALE or mx > 1.0:
            for d in range(top + 1):
                out[d] /= mx
            lscale += math.log(mx)
    # final normalisation: max 1
    mx = 0.0
    for d in range(n + 1):
        if out[d] > mx:
            mx = out[d]
    if mx > 0.0:
        for d in range(n + 1):
            out[d] /= mx
        lscale += math.log(mx)
    return lscale


@kernel
def esp_log_coefficients(fseg, N, n, out):
    """Log E_0..log E_n of the first N factors into ``out[0:n+1]`` (-inf for zeros).

    Log-space twin of :func:`esp_coefficients` for coefficients more than ~1e-280 below
    the largest one (which the single-scale float form holds only as subnormals).
    """
    for d in range(n + 1):
        out[d] = -np.inf
    out[0] = 0.0
    for i in range(N):
        fi = fseg[i]
        lu = _log0(fi)
        lsv = _log0(1.0 - fi)
        for d in range(n, 0, -1):
            out[d] = _lae(lsv + out[d], lu + out[d - 1])
        out[0] = lsv + out[0]
    return 0.0


@kernel
def binary_log_en(f, n):
    """Log E_n(f) of one segment via :func:`esp_coefficients` (-inf when zero)."""
    N = f.shape[0]
    fs = np.empty(max(N, 1), dtype=np.float64)
    for j in range(N):
        fs[j] = f[j]
    out = np.empty(n + 1, dtype=np.float64)
    ls = esp_coefficients(fs, np.int64(N), n, out)
    if out[n] >= DEN_MIN:
        return math.log(out[n]) + ls
    esp_log_coefficients(fs, np.int64(N), n, out)
    return out[n]
