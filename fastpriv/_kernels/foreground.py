"""Foreground-knowledge kernels: build and solve every mined-distribution system at once.

The system (spec ``foreground.md``)
-----------------------------------
For an attribute set A and a sensitive value (or value set) x, the unknowns are
F_i = p(s_i : x) for the *reliable* signatures s_i of A; a tuple whose signature is not
reliable has the fixed probability f0 (the release's global rate of x). With groups L_k
holding n_k occurrences of x, the log-likelihood of the published counts is

    log L(F) = Σ_k log E_{n_k}(f restricted to L_k),   E_d = [z^d] Π_j ((1 - f_j) + f_j z),

and the papers' equations (4)-(6) are its EM fixed-point map
F_i ← (Σ_{j : sig j = i} p_j) / T_i (p_j the binary-model posterior, T_i the number of tuples
of signature i).

Packed layout (one system = one (A, x) pair)
--------------------------------------------
Groups with n_k = 0 or n_k = N_k are *pure*: their likelihood factorises per tuple, so they
collapse into per-variable counts ``C0`` (tuples in groups without x) and ``C1`` (tuples in
groups of x only), plus a constant. Only *mixed* groups (0 < n_k < N_k with at least one
variable tuple) are stored, each as classes (variable index, multiplicity), variable
``-1`` = the fixed rate f0. CSR arrays:

``var_off[s]:var_off[s+1]``   variables of system s (``T``, ``C0``, ``C1``; float64 counts)
``grp_off[s]:grp_off[s+1]``   its mixed groups (``grp_n`` = n_k, ``grp_N`` = N_k)
``cls_off[k]:cls_off[k+1]``   classes of mixed group k (``cls_var`` local index, ``cls_mult``)
``f0[s]``, ``const[s]``       fixed rate and the log-likelihood of everything constant

Solver (per system, all systems in one parallel kernel)
-------------------------------------------------------
Several starts — the naive within-group frequencies, the global rate, user starts, seeded
random points — each run: EM steps until the projected gradient is below 1e-3 (at most
``em_warm`` of them), then projected Newton on log L (gradient from
:func:`~fastpriv._kernels.possible_worlds.loo_core` leave-one-out ratios,
∂ log E_n / ∂ f_j = a_j - b_j; Hessian from leave-*two*-out ratios, obtained by running
``loo_core`` at degrees n and n - 1 on the group minus one tuple of each class; closed
forms when n_k = 1, the Anatomy case), with Bertsekas' ε-active set at the bounds of
[0, 1], a Cholesky solve of -H on the free variables (Levenberg-Marquardt damping when -H
is not positive definite) and a projected Armijo line search. Whenever the line search
finds no increase, the step is an EM step instead (EM never decreases L). A start ends
when the projected gradient (scaled per tuple) is below ``tol``; the end point is then
classified with the eigenvalues of H on its free variables (cyclic Jacobi): a **saddle**
is never returned — two new starts are pushed along ± its ascent eigenvector instead.
The best local maximum wins; flags report several maxima, ties (non-unique maximum) and a
singular Hessian (flat direction).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, threaded
from .._threads import current_threads, run_chunks
from .possible_worlds import (
    _DEN_MIN,
    _RESCALE,
    STATUS_OK,
    STATUS_UNDEFINED,
    _esp_row,
    _factor,
    esp_defined,
    esp_plan,
    loo_core,
)

# ---------------------------------------------------------------- flags (bits) and kinds
FLAG_CONVERGED = 1
FLAG_MAX_ITER = 2
FLAG_MULTIPLE_MAXIMA = 4
FLAG_NONUNIQUE = 8
FLAG_SINGULAR = 16
FLAG_SADDLE_ESCAPED = 32
FLAG_EM_ONLY = 64
FLAG_NUMERIC = 128
FLAG_UNVERIFIED = 256

FLAG_NAMES = (
    (FLAG_CONVERGED, "converged"),
    (FLAG_MAX_ITER, "max_iter"),
    (FLAG_MULTIPLE_MAXIMA, "multiple_local_maxima"),
    (FLAG_NONUNIQUE, "non_unique_maximum"),
    (FLAG_SINGULAR, "singular_hessian"),
    (FLAG_SADDLE_ESCAPED, "saddle_escaped"),
    (FLAG_EM_ONLY, "em_only"),
    (FLAG_NUMERIC, "numerical_trouble"),
    (FLAG_UNVERIFIED, "second_order_unverified"),
)

KIND_MAX = 0
KIND_SADDLE = 1
KIND_MAXITER = 2
KIND_FAILED = 3
KIND_SINGULAR = 4
KIND_UNRESOLVED = 5      # internal to the second-order test
KIND_NAMES = ("maximum", "saddle", "max_iter", "failed", "singular_maximum")

#: Escapes from saddles per system (each pushes up to two new starts).
MAX_ESCAPES = 4
#: Distance (max norm) under which two end points are the same stationary point.
SAME_POINT = 1e-5

_LIMIT = 1 << 20
_CURV = 1e-8
#: Newton starts once the projected gradient is below this (or after ``em_warm`` EM steps).
_SWITCH = 1e-3
#: Largest ε of the ε-active set.
_ACTIVE = 1e-3


# ====================================================================== small helpers
@kernel(helper=True)
def _uniform(seed, s, k, i):
    """Deterministic uniform in (0, 1) from (seed, system, start, coordinate): splitmix64."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    z ^= np.uint64(s) * np.uint64(0xBF58476D1CE4E5B9)
    z ^= np.uint64(k) * np.uint64(0x94D049BB133111EB)
    z += np.uint64(i) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (float(z >> np.uint64(11)) + 0.5) / 9007199254740992.0


@kernel(helper=True)
def _clip01(v):
    if v < 0.0:
        return 0.0
    if v > 1.0:
        return 1.0
    return v


@kernel(helper=True)
def _cholesky(A, k):
    """In-place lower Cholesky of the k x k matrix in ``A`` (row-major); False if not PD."""
    scale = 0.0
    for i in range(k):
        if abs(A[i * k + i]) > scale:
            scale = abs(A[i * k + i])
    if not scale > 0.0:
        return False
    for j in range(k):
        d = A[j * k + j]
        for t in range(j):
            d -= A[j * k + t] * A[j * k + t]
        if not d > 1e-13 * scale:
            return False
        d = math.sqrt(d)
        A[j * k + j] = d
        for i in range(j + 1, k):
            v = A[i * k + j]
            for t in range(j):
                v -= A[i * k + t] * A[j * k + t]
            A[i * k + j] = v / d
    return True


@kernel(helper=True)
def _chol_solve(L, k, b):
    """Solve (L L^T) x = b in place (b becomes x)."""
    for i in range(k):
        v = b[i]
        for t in range(i):
            v -= L[i * k + t] * b[t]
        b[i] = v / L[i * k + i]
    for i in range(k - 1, -1, -1):
        v = b[i]
        for t in range(i + 1, k):
            v -= L[t * k + i] * b[t]
        b[i] = v / L[i * k + i]


@kernel(helper=True)
def _jacobi_eigen(A, k, V, w):
    """Eigen-decompose the symmetric k x k ``A`` (destroyed) by cyclic Jacobi rotations.

    Eigenvalues go to ``w``, eigenvectors to the columns of ``V``.
    """
    for i in range(k):
        for j in range(k):
            V[i * k + j] = 1.0 if i == j else 0.0
    for _sweep in range(100):
        off = 0.0
        tot = 0.0
        for i in range(k):
            for j in range(k):
                a2 = A[i * k + j] * A[i * k + j]
                tot += a2
                if i != j:
                    off += a2
        if off <= 1e-30 * tot or off == 0.0:
            break
        for p in range(k - 1):
            for q in range(p + 1, k):
                apq = A[p * k + q]
                if apq == 0.0:
                    continue
                app = A[p * k + p]
                aqq = A[q * k + q]
                theta = (aqq - app) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                sn = t * c
                for r in range(k):
                    arp = A[r * k + p]
                    arq = A[r * k + q]
                    A[r * k + p] = c * arp - sn * arq
                    A[r * k + q] = sn * arp + c * arq
                for r in range(k):
                    apr = A[p * k + r]
                    aqr = A[q * k + r]
                    A[p * k + r] = c * apr - sn * aqr
                    A[q * k + r] = sn * apr + c * aqr
                for r in range(k):
                    vrp = V[r * k + p]
                    vrq = V[r * k + q]
                    V[r * k + p] = c * vrp - sn * vrq
                    V[r * k + q] = sn * vrp + c * vrq
    for i in range(k):
        w[i] = A[i * k + i]


# ====================================================================== evaluation
@kernel(helper=True)
def _ws_need(N, n):
    """Workspace for loo_core on (N, n), (N - 1, n) and (N - 1, n - 1)."""
    w = esp_plan(N, n, np.int64(_LIMIT))[4]
    w2 = esp_plan(N - 1, n, np.int64(_LIMIT))[4]
    if w2 > w:
        w = w2
    if n >= 1:
        w3 = esp_plan(N - 1, n - 1, np.int64(_LIMIT))[4]
        if w3 > w:
            w = w3
    return w


@kernel(inline="always")
def _system_workspace(gb, ge, grp_n, grp_N, cls_off):
    """Scratch for the groups ``gb .. ge-1`` of one system.

    ``(ws, fseg, fsub, o1, o2, q1, q2, r1, r2, gcls, rep)``: the ESP workspace
    (:func:`_ws_need` of the largest group), eight segment buffers of the largest N and
    two of the most classes in a group.
    """
    nmax = 2
    wsz = 1
    kmax = 1
    for k in range(gb, ge):
        N = grp_N[k]
        if N > nmax:
            nmax = N
        K = cls_off[k + 1] - cls_off[k]
        if K > kmax:
            kmax = K
        wsz = max(wsz, _ws_need(np.int64(N), np.int64(grp_n[k])))
    return (np.empty(wsz, dtype=np.float64), np.empty(nmax, dtype=np.float64),
            np.empty(nmax, dtype=np.float64), np.empty(nmax, dtype=np.float64),
            np.empty(nmax, dtype=np.float64), np.empty(nmax, dtype=np.float64),
            np.empty(nmax, dtype=np.float64), np.empty(nmax, dtype=np.float64),
            np.empty(nmax, dtype=np.float64), np.empty(kmax, dtype=np.float64),
            np.empty(kmax, dtype=np.int64))


@kernel(helper=True)
def _fill_group(F, k, cls_off, cls_var, cls_mult, f0, fseg):
    """Tuple probabilities of mixed group k into ``fseg``; returns N."""
    pos = 0
    for c in range(cls_off[k], cls_off[k + 1]):
        v = cls_var[c]
        fv = f0 if v < 0 else F[v]
        for _ in range(cls_mult[c]):
            fseg[pos] = fv
            pos += 1
    return pos


@kernel(helper=True)
def _single_ok(F, k, cls_off, cls_var, f0):
    """Whether the closed form for n_k = 1 applies (all f < 1 - 1e-6, some f > 0)."""
    pos = False
    for c in range(cls_off[k], cls_off[k + 1]):
        v = cls_var[c]
        fv = f0 if v < 0 else F[v]
        if fv > 1.0 - 1e-6:
            return False
        if fv > 0.0:
            pos = True
    return pos


@kernel
def _evaluate(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0, C1, cst, want,
              grad, emn, fseg, ws, o1, o2):
    """Log L(F); with ``want`` also the score ``grad`` and the EM numerators ``emn``.

    Returns ``(ok, loglik)``: ok = 1 fine, 0 infeasible (L = 0), 2 non-finite ratios.
    """
    ll = cst
    for i in range(m):
        Fi = F[i]
        c0 = C0[vb + i]
        c1 = C1[vb + i]
        if want == 1:
            grad[i] = 0.0
            emn[i] = c1
        if c1 > 0.0:
            if Fi <= 0.0:
                return 0, -np.inf
            ll += c1 * math.log(Fi)
            if want == 1:
                grad[i] += c1 / Fi
        if c0 > 0.0:
            if Fi >= 1.0:
                return 0, -np.inf
            ll += c0 * math.log1p(-Fi)
            if want == 1:
                grad[i] -= c0 / (1.0 - Fi)
    for k in range(gb, ge):
        if grp_n[k] == 1 and _single_ok(F, np.int64(k), cls_off, cls_var, f0):
            # n = 1: E_1 = Π (1 - f_j) Σ o_j, o = f / (1 - f); p_j = o_j / Σ o
            wk = grp_w[k]
            S1 = 0.0
            L1 = 0.0
            for c in range(cls_off[k], cls_off[k + 1]):
                v = cls_var[c]
                fv = f0 if v < 0 else F[v]
                mc = cls_mult[c]
                S1 += mc * fv / (1.0 - fv)
                L1 += mc * math.log1p(-fv)
            ll += wk * (L1 + math.log(S1))
            if want == 1:
                for c in range(cls_off[k], cls_off[k + 1]):
                    v = cls_var[c]
                    if v < 0:
                        continue
                    fv = F[v]
                    om = 1.0 - fv
                    mc = cls_mult[c]
                    grad[v] += wk * mc * (1.0 / (om * om * S1) - 1.0 / om)
                    emn[v] += wk * mc * (fv / om) / S1
            continue
        N = _fill_group(F, np.int64(k), cls_off, cls_var, cls_mult, f0, fseg)
        res = loo_core(fseg, np.int64(N), np.int64(grp_n[k]), ws, o1, o2, np.int64(1),
                       np.int64(_LIMIT))
        if res[0] == STATUS_UNDEFINED or not res[1] > -np.inf:
            return 0, -np.inf
        wk = grp_w[k]
        ll += wk * res[1]
        if want == 1:
            pos = 0
            for c in range(cls_off[k], cls_off[k + 1]):
                v = cls_var[c]
                mc = cls_mult[c]
                if v >= 0:
                    a = o1[pos]
                    b = o2[pos]
                    if not (abs(a) < np.inf and abs(b) < np.inf):
                        return 2, ll
                    grad[v] += wk * mc * (a - b)
                    if F[v] > 0.0:
                        emn[v] += wk * mc * F[v] * a
                pos += mc
    return 1, ll


@kernel(helper=True)
def _loo_needed(fseg, N, n, ws, out1, out2, need):
    """:func:`loo_core` (mode 1) writing ``out1``/``out2`` only where ``need[j]`` (and j = 0).

    The same arithmetic as ``loo_core`` on its direct path (one unblocked prefix table, no
    rescaling), minus the leave-one-out dot products of the positions nobody reads: the
    Hessian reads one tuple per class of the group minus one tuple. Every other case
    (blocked table, a row rescaled, undefined, a small denominator) is ``loo_core`` itself,
    so the outputs at the needed positions and the log ESP are bit-identical. Skipping the
    denominator test at the other positions is safe: without rescaling every position's
    denominator is the same sum of non-negative terms, E_n of the segment, so all of them
    clear ``_DEN_MIN`` when position 0's clears 1e10 times it.
    """
    lim = np.int64(_LIMIT)
    if not esp_defined(fseg, np.int64(0), N, n):
        return loo_core(fseg, N, n, ws, out1, out2, np.int64(1), lim)
    flip, m, b, nc, _ = esp_plan(N, n, lim)
    if nc > 1:
        return loo_core(fseg, N, n, ws, out1, out2, np.int64(1), lim)
    w = m + 1
    BLK = w + 1
    SUF = BLK + b * w + b
    for d in range(w):
        ws[BLK + d] = 0.0
    ws[BLK] = 1.0
    top = np.int64(0)
    for t in range(1, N):
        up, stay = _factor(fseg[t - 1], flip)
        cur = BLK + t * w
        top, mx = _esp_row(ws, cur - w, cur, top, m, stay, up)
        if mx < _RESCALE:
            return loo_core(fseg, N, n, ws, out1, out2, np.int64(1), lim)
    for d in range(w):
        ws[SUF + d] = 0.0
    ws[SUF] = 1.0
    stop = np.int64(0)
    log_e = -np.inf
    for j in range(N - 1, -1, -1):
        up, stay = _factor(fseg[j], flip)
        if need[j] != 0 or j == 0:
            P = BLK + j * w
            ptop = j if j < m else m
            A = 0.0
            A1 = 0.0
            B = 0.0
            B1 = 0.0
            a = m - 1 - stop
            if a < 0:
                a = 0
            hi = ptop if ptop < m else m - 1
            base = SUF + m
            while a < hi:
                p0 = ws[P + a]
                p1 = ws[P + a + 1]
                A += p0 * ws[base - 1 - a]
                B += p0 * ws[base - a]
                A1 += p1 * ws[base - 2 - a]
                B1 += p1 * ws[base - 1 - a]
                a += 2
            if a == hi:
                p0 = ws[P + a]
                A += p0 * ws[base - 1 - a]
                B += p0 * ws[base - a]
            if ptop == m:
                B += ws[P + m] * ws[SUF]
            A += A1
            B += B1
            den = up * A + stay * B
            if not den >= _DEN_MIN or (j == 0 and not den >= 1e10 * _DEN_MIN):
                return loo_core(fseg, N, n, ws, out1, out2, np.int64(1), lim)
            if flip:
                out1[j] = B / den
                out2[j] = A / den
            else:
                out1[j] = A / den
                out2[j] = B / den
            if j == 0:
                log_e = math.log(den) + 0.0 + 0.0
                break
        stop, mx = _esp_row(ws, SUF, SUF, stop, m, stay, up)
        if mx < _RESCALE:
            return loo_core(fseg, N, n, ws, out1, out2, np.int64(1), lim)
    return STATUS_OK, log_e


# _hessian is one kernel of ~150 lines on purpose: with the n_k = 1 closed form and the
# leave-two-out pairs of a mixed group as kernels of their own (called once per group), the
# solve of ``foreground.attack`` on 20k rows (one thread) took 212 ms instead of 163 ms.
@kernel(helper=True)
def _sub_gram(H, Ha, cls_var, c0k, K, gcls, wk, m):
    """Add a group's −w·g gᵀ term to the Hessian ``H`` (and w·|g gᵀ| to its scale ``Ha``).

    ``g`` is ``gcls`` over the group's classes ``c0k .. c0k+K-1``; classes without a
    variable (``cls_var < 0``) are skipped.
    """
    for cl in range(K):
        v = cls_var[c0k + cl]
        if v < 0:
            continue
        for cl2 in range(K):
            v2 = cls_var[c0k + cl2]
            if v2 < 0:
                continue
            H[v * m + v2] -= wk * gcls[cl] * gcls[cl2]
            Ha[v * m + v2] += wk * abs(gcls[cl] * gcls[cl2])


@kernel
def _hessian(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0, C1, H, Ha,
             fseg, fsub, ws, o1, o2, q1, q2, r1, r2, gcls, rep):
    """Hessian of log L at F into ``H`` (m x m, row-major). False on numerical failure.

    ``Ha`` receives, per entry, the sum of the absolute values of the terms added into
    ``H``: the magnitude against which round-off in ``H`` is judged (a Hessian whose
    terms cancel to ~1e-16 of their size is zero, not a curvature of either sign).

    Mixed group, tuples j ≠ l: ∂²E_n/∂f_j∂f_l = E_{n-2}(f_-jl) - 2 E_{n-1}(f_-jl) + E_n(f_-jl)
    (E_n is multilinear, so ∂²/∂f_j² = 0). With f_-j the group minus one tuple j of a class,
    ``loo_core`` at degree n gives q = (E_{n-1}, E_n)(f_-jl) / E_n(f_-j) and at degree n - 1
    gives r = (E_{n-2}, E_{n-1})(f_-jl) / E_{n-1}(f_-j); hence
    ∂²E_n/∂f_j∂f_l / E_n(f) = e2 (r1 - r2) - e1 (q1 - q2), e1 = E_n(f_-j)/E_n(f),
    e2 = E_{n-1}(f_-j)/E_n(f). Per class pair (c, d) the tuple pairs add up:
    H[c, d] += m_c m_d' D - g_c g_d with m_d' = m_d (d ≠ c) or m_c - 1 (d = c).
    """
    for i in range(m * m):
        H[i] = 0.0
        Ha[i] = 0.0
    need = np.zeros(fseg.shape[0], dtype=np.uint8)
    for i in range(m):
        Fi = F[i]
        c0 = C0[vb + i]
        c1 = C1[vb + i]
        h = 0.0
        if c1 > 0.0:
            if Fi <= 0.0:
                return False
            h -= c1 / (Fi * Fi)
        if c0 > 0.0:
            if Fi >= 1.0:
                return False
            h -= c0 / ((1.0 - Fi) * (1.0 - Fi))
        H[i * m + i] = h
        Ha[i * m + i] = -h
    for k in range(gb, ge):
        n = grp_n[k]
        c0k = cls_off[k]
        if n == 1 and _single_ok(F, np.int64(k), cls_off, cls_var, f0):
            # log E_1 = Σ_c m_c log(1 - F_c) + log S, S = Σ_c m_c o_c:
            # H_cd = δ_cd m_c (o''_c / S - 1/(1-F_c)²) - m_c m_d o'_c o'_d / S²,
            # o' = 1/(1-F)², o'' = 2/(1-F)³
            wk = grp_w[k]
            K = cls_off[k + 1] - c0k
            S1 = 0.0
            for cl in range(K):
                v = cls_var[c0k + cl]
                fv = f0 if v < 0 else F[v]
                S1 += cls_mult[c0k + cl] * fv / (1.0 - fv)
            for cl in range(K):
                v = cls_var[c0k + cl]
                if v < 0:
                    gcls[cl] = 0.0
                    continue
                om = 1.0 - F[v]
                gcls[cl] = cls_mult[c0k + cl] / (om * om * S1)
                H[v * m + v] += wk * cls_mult[c0k + cl] * (2.0 / (om * om * om * S1)
                                                           - 1.0 / (om * om))
                Ha[v * m + v] += wk * cls_mult[c0k + cl] * (2.0 / (om * om * om * S1)
                                                            + 1.0 / (om * om))
            _sub_gram(H, Ha, cls_var, c0k, K, gcls, wk, m)
            continue
        N = _fill_group(F, np.int64(k), cls_off, cls_var, cls_mult, f0, fseg)
        K = cls_off[k + 1] - c0k
        pos = 0
        for cl in range(K):
            rep[cl] = pos
            pos += cls_mult[c0k + cl]
        for cl in range(K):
            if cls_var[c0k + cl] >= 0:
                need[rep[cl]] = 1
        res = _loo_needed(fseg, np.int64(N), np.int64(n), ws, o1, o2, need)
        for cl in range(K):
            need[rep[cl]] = 0
        if res[0] == STATUS_UNDEFINED:
            return False
        L = res[1]
        wk = grp_w[k]
        for cl in range(K):
            v = cls_var[c0k + cl]
            if v >= 0:
                gcls[cl] = cls_mult[c0k + cl] * (o1[rep[cl]] - o2[rep[cl]])
            else:
                gcls[cl] = 0.0
        for cl in range(K):
            v = cls_var[c0k + cl]
            if v < 0:
                continue
            mc = cls_mult[c0k + cl]
            j = rep[cl]
            p = 0
            for t in range(N):
                if t != j:
                    fsub[p] = fseg[t]
                    p += 1
            for cl2 in range(K):
                if cls_var[c0k + cl2] >= 0:
                    q = rep[cl2]
                    if q > j:
                        q -= 1
                    elif cl2 == cl:
                        q = j
                    need[q] = 1
            ra = _loo_needed(fsub, np.int64(N - 1), np.int64(n), ws, q1, q2, need)
            e1 = 0.0
            if ra[0] != STATUS_UNDEFINED and ra[1] > -np.inf:
                e1 = math.exp(ra[1] - L)
            rb = _loo_needed(fsub, np.int64(N - 1), np.int64(n - 1), ws, r1, r2, need)
            for cl2 in range(K):
                if cls_var[c0k + cl2] >= 0:
                    q = rep[cl2]
                    if q > j:
                        q -= 1
                    elif cl2 == cl:
                        q = j
                    need[q] = 0
            e2 = 0.0
            if rb[0] != STATUS_UNDEFINED and rb[1] > -np.inf:
                e2 = math.exp(rb[1] - L)
            for cl2 in range(K):
                v2 = cls_var[c0k + cl2]
                if v2 < 0:
                    continue
                m2 = cls_mult[c0k + cl2]
                if cl2 == cl:
                    m2 -= 1
                if m2 <= 0:
                    continue
                q = rep[cl2]
                if q > j:
                    q -= 1
                elif cl2 == cl:
                    q = j          # the next tuple of the same class moved to index j
                D = 0.0
                Dabs = 0.0
                if e2 > 0.0:
                    D += e2 * (r1[q] - r2[q])
                    Dabs += e2 * (abs(r1[q]) + abs(r2[q]))
                if e1 > 0.0:
                    D -= e1 * (q1[q] - q2[q])
                    Dabs += e1 * (abs(q1[q]) + abs(q2[q]))
                H[v * m + v2] += wk * mc * m2 * D
                Ha[v * m + v2] += wk * mc * m2 * Dabs
        _sub_gram(H, Ha, cls_var, c0k, K, gcls, wk, m)
    for i in range(m * m):
        if not abs(H[i]) < np.inf:
            return False
    return True


# ====================================================================== one system
@kernel(helper=True)
def _pgrad(F, grad, T, vb, m):
    """max_i |clip(F_i + g_i / T_i) - F_i|: the per-tuple projected gradient."""
    pg = 0.0
    for i in range(m):
        t = T[vb + i]
        if t <= 0.0:
            continue
        y = _clip01(F[i] + grad[i] / t)
        d = abs(y - F[i])
        if d > pg:
            pg = d
    return pg


@kernel(helper=True)
def _neg_definite(H, m, idx, nf, Hf, scale):
    """Whether H restricted to ``idx[:nf]`` is negative definite (with margin δ·scale)."""
    for a in range(nf):
        for b in range(nf):
            Hf[a * nf + b] = -H[idx[a] * m + idx[b]]
        Hf[a * nf + a] -= _CURV * scale
    return _cholesky(Hf, np.int64(nf))


@kernel(helper=True)
def _classify(F, vb, m, T, grad, H, Ha, Hf, Vf, wf, idx, dirv):
    """Second-order test at a stationary point (Hessian ``H``).

    Returns the kind: ``KIND_MAX`` when H is negative definite on the interior variables
    together with the *degenerate* bound variables (zero score on a bound) — the
    second-order sufficient condition; ``KIND_SADDLE`` when H has an ascent direction
    among the interior variables (its eigenvector, expanded to all m variables, is left
    in ``dirv``); ``KIND_UNRESOLVED`` when the interior is strictly concave but degenerate
    bound variables are not (the caller probes them by moving inward); else
    ``KIND_SINGULAR`` (a flat direction). Strict bound variables (score pointing out) are
    fixed by the first-order condition.
    """
    nf = 0
    for i in range(m):
        t = T[vb + i]
        if t <= 0.0:
            continue
        if F[i] > 0.0 and F[i] < 1.0:
            idx[nf] = i
            nf += 1
    ni = nf
    for i in range(m):
        t = T[vb + i]
        if t <= 0.0 or (F[i] > 0.0 and F[i] < 1.0):
            continue
        if abs(grad[i]) / t <= 1e-7:
            idx[nf] = i
            nf += 1
    if nf == 0:
        return KIND_MAX
    # curvature is judged against the size of the terms that make up H (``Ha``), not
    # against H itself: terms cancelling to round-off are a flat direction
    scale = 0.0
    for a in range(nf):
        for b in range(nf):
            v = Ha[idx[a] * m + idx[b]]
            if v > scale:
                scale = v
    if not scale > 0.0:
        return KIND_SINGULAR
    if _neg_definite(H, m, idx, np.int64(nf), Hf, scale):
        return KIND_MAX
    if ni == 0:
        return KIND_UNRESOLVED
    if _neg_definite(H, m, idx, np.int64(ni), Hf, scale):
        return KIND_UNRESOLVED
    for a in range(ni):
        for b in range(ni):
            Hf[a * ni + b] = H[idx[a] * m + idx[b]]
    _jacobi_eigen(Hf, np.int64(ni), Vf, wf)
    top = 0
    for a in range(1, ni):
        if wf[a] > wf[top]:
            top = a
    if wf[top] > _CURV * scale:
        for i in range(m):
            dirv[i] = 0.0
        for a in range(ni):
            dirv[idx[a]] = Vf[a * ni + top]
        return KIND_SADDLE
    return KIND_SINGULAR


#: Largest number of free variables for which an indefinite Newton step is probed.
_PROBE_MAX = 64


@kernel(helper=True)
def _probe_both_sides(F, m, idx, nf, H, Ha, Hf, Vf, wf, Fn, dirv, ll, Q, nq, qcap, mm, vb, gb,
                      ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0, C1, cst, grad, emn,
                      fseg, ws, o1, o2):
    """Queue starts at F ± t·v (v the top eigenvector of H on ``idx[:nf]``) that raise L.

    Used where the Newton step met an indefinite Hessian near a stationary point. Returns
    the new number of queued starts (unchanged when the top eigenvalue is not clearly
    positive or no side raises L).
    """
    scale = 0.0
    for a in range(nf):
        for b in range(nf):
            Hf[a * nf + b] = H[idx[a] * m + idx[b]]
            if Ha[idx[a] * m + idx[b]] > scale:
                scale = Ha[idx[a] * m + idx[b]]
    _jacobi_eigen(Hf, nf, Vf, wf)
    top = 0
    for a in range(1, nf):
        if wf[a] > wf[top]:
            top = a
    if not wf[top] > _CURV * scale:
        return nq
    for i in range(m):
        dirv[i] = 0.0
    for a in range(nf):
        dirv[idx[a]] = Vf[a * nf + top]
    for sign in (1.0, -1.0):
        tstep = 0.1
        while tstep >= 1e-4:
            for i in range(m):
                Fn[i] = _clip01(F[i] + sign * tstep * dirv[i])
            ev = _evaluate(Fn, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0,
                           C0, C1, cst, np.int64(0), grad, emn, fseg, ws, o1, o2)
            if ev[0] == 1 and ev[1] > ll + 1e-12 * (1.0 + abs(ll)):
                if nq < qcap:
                    for i in range(m):
                        Q[nq * mm + i] = Fn[i]
                    nq += 1
                break
            tstep *= 0.1
    return nq


@kernel(helper=True)
def _start_queue(s, vb, m, gb, ge, T, C1, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult, f0,
                 start_off, start_vals, n_random, seed, default_starts, sysid):
    """Queue the starts of system s: ``(Q, nq, qcap)``, rows of ``max(m, 1)`` values.

    The naive within-group frequencies and the global rate (``default_starts``), the
    user's starts, then seeded random points; room for ``2 * MAX_ESCAPES`` more.
    """
    mm = m if m > 0 else 1
    n_user = start_off[s + 1] - start_off[s]
    n_user = n_user // mm if m > 0 else 0
    n_init = n_user + n_random + (2 if default_starts == 1 else 0)
    qcap = n_init + 2 * MAX_ESCAPES
    Q = np.empty(qcap * mm, dtype=np.float64)
    nq = 0
    if default_starts == 1:
        # naive within-group frequencies
        for i in range(m):
            Q[nq * mm + i] = C1[vb + i]
        for k in range(gb, ge):
            rate = grp_w[k] * grp_n[k] / grp_N[k]
            for c in range(cls_off[k], cls_off[k + 1]):
                v = cls_var[c]
                if v >= 0:
                    Q[nq * mm + v] += cls_mult[c] * rate
        for i in range(m):
            t = T[vb + i]
            Q[nq * mm + i] = Q[nq * mm + i] / t if t > 0.0 else f0
        nq += 1
        for i in range(m):
            Q[nq * mm + i] = f0
        nq += 1
    for u in range(n_user):
        for i in range(m):
            Q[nq * mm + i] = _clip01(start_vals[start_off[s] + u * mm + i])
        nq += 1
    for u in range(n_random):
        for i in range(m):
            Q[nq * mm + i] = _uniform(np.int64(seed), np.int64(sysid), np.int64(u),
                                      np.int64(i))
        nq += 1
    return Q, nq, qcap


@kernel(helper=True)
def _newton_direction(F, grad, H, Hf, wf, idx, d, T, vb, m, pg):
    """Projected Newton direction ``d``: ``(chol, nf, mu)``.

    Bertsekas' ε-active set: near a bound with the score pointing out, the variable goes
    to the bound; the ``nf`` others (``idx``) take a Newton step, or a Levenberg-Marquardt
    damped one (-H + μI, μ > 0) when -H is not positive definite: always an ascent
    direction. ``chol`` is False when no damping made the system solvable.
    """
    eps = _ACTIVE if pg > _ACTIVE else pg
    nf = 0
    for i in range(m):
        d[i] = 0.0
        if T[vb + i] <= 0.0:
            continue
        if F[i] <= eps and grad[i] <= 0.0:
            d[i] = -F[i]
            continue
        if F[i] >= 1.0 - eps and grad[i] >= 0.0:
            d[i] = 1.0 - F[i]
            continue
        idx[nf] = i
        nf += 1
    chol = True
    mu = 0.0
    if nf > 0:
        hscale = 0.0
        for a in range(nf):
            for b in range(nf):
                v = abs(H[idx[a] * m + idx[b]])
                if v > hscale:
                    hscale = v
        for _ in range(14):
            for a in range(nf):
                for b in range(nf):
                    Hf[a * nf + b] = -H[idx[a] * m + idx[b]]
                Hf[a * nf + a] += mu
            chol = _cholesky(Hf, np.int64(nf))
            if chol:
                break
            mu = 1e-8 * hscale if mu == 0.0 else mu * 10.0
        if chol:
            for a in range(nf):
                wf[a] = grad[idx[a]]
            _chol_solve(Hf, np.int64(nf), wf)
            for a in range(nf):
                d[idx[a]] = wf[a]
    return chol, nf, mu


@kernel(helper=True)
def _em_step(F, emn, grad, T, vb, m):
    """EM step (monotone): F_i <- Σ p_j / T_i.

    A variable exactly at a bound is an EM fixed point even when the score points inward
    (p_j = F a_j = 0): nudge it inward instead.
    """
    for i in range(m):
        t = T[vb + i]
        if t > 0.0:
            nv = _clip01(emn[i] / t)
            if (F[i] <= 0.0 and grad[i] > 0.0) or (F[i] >= 1.0 and grad[i] < 0.0):
                nv = _clip01(F[i] + 1e-3 * grad[i] / t)
            F[i] = nv


@kernel(helper=True)
def _best_endpoint(ep_kind, ep_ll, e0, n_ep):
    """Index of the best end point (−1: every start failed).

    The highest likelihood of any start that did not end at a saddle or fail; a start
    stopped by max_iter only counts when it is better.
    """
    best = -1
    for e in range(n_ep):
        k = ep_kind[e0 + e]
        if k == KIND_MAX or k == KIND_SINGULAR:
            if best < 0 or ep_ll[e0 + e] > ep_ll[e0 + best]:
                best = e
    for e in range(n_ep):
        if ep_kind[e0 + e] == KIND_MAXITER:
            if best < 0 or ep_ll[e0 + e] > ep_ll[e0 + best] + 1e-9 * (
                    1.0 + abs(ep_ll[e0 + best])):
                best = e
    return best


@kernel(inline="always")  # small: inlined, any argument types
def _sup_distance(a, a0, b, b0, T, vb, m):
    """max_i |a[a0 + i] - b[b0 + i]| over the variables with tuples (T_i > 0)."""
    dist = 0.0
    for i in range(m):
        if T[vb + i] <= 0.0:
            continue
        dd = abs(a[a0 + i] - b[b0 + i])
        if dd > dist:
            dist = dd
    return dist


@kernel(helper=True)
def _maxima(ep_F, ep_kind, ep_ll, e0, eF0, n_ep, mm, F, T, vb, m):
    """``(n_max, second)``: distinct local maxima among the end points; second best.

    ``second`` is the best likelihood of an end point away from F (the answer).
    """
    n_max = 0
    second = -np.inf
    for e in range(n_ep):
        if not (ep_kind[e0 + e] == KIND_MAX or ep_kind[e0 + e] == KIND_SINGULAR):
            continue
        new = True
        for e2 in range(e):
            if not (ep_kind[e0 + e2] == KIND_MAX or ep_kind[e0 + e2] == KIND_SINGULAR):
                continue
            if _sup_distance(ep_F, eF0 + e * mm, ep_F, eF0 + e2 * mm, T, vb, m) <= SAME_POINT:
                new = False
                break
        if new:
            n_max += 1
        if (_sup_distance(ep_F, eF0 + e * mm, F, np.int64(0), T, vb, m) > SAME_POINT
                and ep_ll[e0 + e] > second):
            second = ep_ll[e0 + e]
    return n_max, second


# _solve_system is one kernel of ~250 lines on purpose. Numba links every kernel a kernel
# calls into the caller and re-optimizes the whole linked closure there (``loo_core`` under
# ``_evaluate``/``_hessian``): splitting the start loop, polish, saddle probes and line search
# into kernels of their own (each calling ``_evaluate``) took the cold compile of the
# foreground warm-up workload from 19.1 to 30.0 CPU-s (``benchmarks/bench_cold_start.py``
# profile); only the steps that call no likelihood evaluation are separate kernels.
@kernel
def _solve_system(s, var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult,
                  f0s, consts, start_off, start_vals, n_random, seed, default_starts,
                  max_iter, em_warm, tol, newton_max, outF, ep_F, ep_ll, ep_kind, ep_it,
                  e0, cap, eF0, sysid):
    """Solve system ``s``; best F into ``outF[var_off[s]:...]``.

    Returns ``(loglik, iterations, flags, em_residual, pgrad, n_maxima, second_loglik,
    n_endpoints)``; every start's end point is recorded in ``ep_*[e0:e0 + cap]`` (F rows of
    m values from ``ep_F[eF0]``).
    """
    vb = var_off[s]
    m = var_off[s + 1] - vb
    gb = grp_off[s]
    ge = grp_off[s + 1]
    f0 = f0s[s]
    cst = consts[s]
    ws, fseg, fsub, o1, o2, q1, q2, r1, r2, gcls, rep = _system_workspace(gb, ge, grp_n, grp_N,
                                                                        cls_off)
    mm = m if m > 0 else 1
    F = np.empty(mm, dtype=np.float64)
    Fn = np.empty(mm, dtype=np.float64)
    grad = np.empty(mm, dtype=np.float64)
    emn = np.empty(mm, dtype=np.float64)
    d = np.empty(mm, dtype=np.float64)
    dirv = np.empty(mm, dtype=np.float64)
    idx = np.empty(mm, dtype=np.int64)
    use_newton = m <= newton_max
    hm = mm if use_newton else 1
    H = np.empty(hm * hm, dtype=np.float64)
    Ha = np.empty(hm * hm, dtype=np.float64)
    Hf = np.empty(hm * hm, dtype=np.float64)
    Vf = np.empty(hm * hm, dtype=np.float64)
    wf = np.empty(hm, dtype=np.float64)
    Q, nq, qcap = _start_queue(s, vb, m, gb, ge, T, C1, grp_n, grp_N, grp_w, cls_off, cls_var,
                               cls_mult, f0, start_off, start_vals, n_random, seed,
                               default_starts, sysid)
    escapes = 0
    n_ep = 0
    total_it = 0
    numeric = False
    unverified = False
    qi = 0
    while qi < nq:
        for i in range(m):
            F[i] = Q[qi * mm + i]
        qi += 1
        it = 0
        kind = KIND_MAXITER
        ll = -np.inf
        probed = False
        while True:
            ev = _evaluate(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0, C1,
                           cst, np.int64(1), grad, emn, fseg, ws, o1, o2)
            ll = ev[1]
            if ev[0] != 1:
                kind = KIND_FAILED
                numeric = True
                break
            pg = _pgrad(F, grad, T, vb, m)
            if pg <= tol:
                # polish: put variables within 1e-8 of a bound, score pointing outward, on
                # the bound when that does not lower the likelihood
                snap = False
                for i in range(m):
                    Fn[i] = F[i]
                    if T[vb + i] <= 0.0:
                        continue
                    if 0.0 < F[i] < 1e-8 and grad[i] < 0.0:
                        Fn[i] = 0.0
                        snap = True
                    elif 1.0 - 1e-8 < F[i] < 1.0 and grad[i] > 0.0:
                        Fn[i] = 1.0
                        snap = True
                if snap:
                    ev4 = _evaluate(Fn, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0,
                                    C0, C1, cst, np.int64(1), d, dirv, fseg, ws, o1, o2)
                    if ev4[0] == 1 and ev4[1] >= ll - 1e-13 * (1.0 + abs(ll)):
                        ll = ev4[1]
                        for i in range(m):
                            F[i] = Fn[i]
                            grad[i] = d[i]
                            emn[i] = dirv[i]
                if not use_newton:
                    kind = KIND_MAX
                    unverified = True
                    break
                hok = _hessian(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0,
                               C1, H, Ha, fseg, fsub, ws, o1, o2, q1, q2, r1, r2, gcls, rep)
                if hok:
                    kind = _classify(F, vb, m, T, grad, H, Ha, Hf, Vf, wf, idx, dirv)
                else:
                    kind = KIND_MAX
                    unverified = True
                if kind == KIND_UNRESOLVED or kind == KIND_SINGULAR:
                    # degenerate bound variables (zero score on a bound) whose curvature
                    # is not negative: a maximum only if moving inward does not increase
                    # L; otherwise treat as a saddle and escape inward
                    kind = KIND_SINGULAR
                    for i in range(m):
                        t = T[vb + i]
                        if t <= 0.0 or (F[i] > 0.0 and F[i] < 1.0):
                            continue
                        if abs(grad[i]) / t > 1e-7:
                            continue
                        for i2 in range(m):
                            dirv[i2] = 0.0
                        dirv[i] = 1.0 if F[i] <= 0.0 else -1.0
                        up = False
                        for tstep in (1e-2, 1e-4):
                            for i2 in range(m):
                                Fn[i2] = F[i2]
                            Fn[i] = _clip01(F[i] + tstep * dirv[i])
                            ev5 = _evaluate(Fn, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var,
                                            cls_mult, f0, C0, C1, cst, np.int64(0), grad, emn,
                                            fseg, ws, o1, o2)
                            if ev5[0] == 1 and ev5[1] > ll + 1e-12 * (1.0 + abs(ll)):
                                up = True
                                break
                        if up:
                            kind = KIND_SADDLE
                            break
                break
            if it >= max_iter:
                break
            it += 1
            stepped = False
            if use_newton and (it > em_warm or pg <= _SWITCH):
                hok = _hessian(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0,
                               C1, H, Ha, fseg, fsub, ws, o1, o2, q1, q2, r1, r2, gcls, rep)
                if hok:
                    chol, nf, mu = _newton_direction(F, grad, H, Hf, wf, idx, d, T, vb, m, pg)
                    if nf > 0:
                        if (mu > 0.0 and not probed and escapes < MAX_ESCAPES
                                and nf <= _PROBE_MAX):
                            # the first Newton step of a start (where EM has brought it
                            # near a stationary point) meets an indefinite H: a saddle
                            # region, where the damped step climbs one side only (EM
                            # would drift to either side by round-off); push starts on
                            # both sides of the ascent eigenvector so both basins are
                            # searched
                            nq2 = _probe_both_sides(F, m, idx, np.int64(nf), H, Ha, Hf, Vf,
                                                    wf, Fn, dirv, ll, Q, np.int64(nq),
                                                    np.int64(qcap), np.int64(mm), vb, gb, ge,
                                                    grp_n, grp_w, cls_off, cls_var, cls_mult,
                                                    f0, C0, C1, cst, grad, emn, fseg, ws, o1,
                                                    o2)
                            if nq2 > nq:
                                escapes += 1
                                nq = nq2
                        probed = True
                    if chol:
                        alpha = 1.0
                        for _ in range(40):
                            gd = 0.0
                            for i in range(m):
                                Fn[i] = _clip01(F[i] + alpha * d[i])
                                gd += grad[i] * (Fn[i] - F[i])
                            ev2 = _evaluate(Fn, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var,
                                            cls_mult, f0, C0, C1, cst, np.int64(0), grad,
                                            emn, fseg, ws, o1, o2)
                            # Armijo; near convergence the predicted gain can be
                            # below round-off: then not decreasing is enough
                            tiny = gd <= 1e-12 * (1.0 + abs(ll))
                            if ev2[0] == 1 and ((ev2[1] > ll and ev2[1] >= ll + 1e-4 * gd)
                                                or (tiny and ev2[1] >= ll - 1e-14 * (
                                                    1.0 + abs(ll)))):
                                for i in range(m):
                                    F[i] = Fn[i]
                                stepped = True
                                break
                            alpha *= 0.5
                            if alpha < 1e-12:
                                break
            if not stepped:
                _em_step(F, emn, grad, T, vb, m)
        total_it += it
        if kind == KIND_SADDLE:
            # a saddle is a point L can be increased from: probe ± the ascent direction
            # (pushing new starts while escapes are left); when neither side increases L
            # the second-order test saw round-off, and the point is a flat (singular)
            # maximum, not a saddle
            push = escapes < MAX_ESCAPES
            if push:
                escapes += 1
            ascent = False
            for sign in (1.0, -1.0):
                tstep = 0.1
                while tstep >= 1e-6:
                    for i in range(m):
                        Fn[i] = _clip01(F[i] + sign * tstep * dirv[i])
                    ev3 = _evaluate(Fn, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0,
                                    C0, C1, cst, np.int64(0), grad, emn, fseg, ws, o1, o2)
                    if ev3[0] == 1 and ev3[1] > ll + 1e-12 * (1.0 + abs(ll)):
                        ascent = True
                        if push and nq < qcap:
                            for i in range(m):
                                Q[nq * mm + i] = Fn[i]
                            nq += 1
                        break
                    tstep *= 0.1
            if not ascent:
                kind = KIND_SINGULAR
        if n_ep < cap:
            for i in range(m):
                ep_F[eF0 + n_ep * mm + i] = F[i]
            ep_ll[e0 + n_ep] = ll
            ep_kind[e0 + n_ep] = kind
            ep_it[e0 + n_ep] = it
            n_ep += 1
    best = _best_endpoint(ep_kind, ep_ll, e0, n_ep)
    flags = 0
    if best >= 0:
        if ep_kind[e0 + best] == KIND_MAXITER:
            flags |= FLAG_MAX_ITER
        else:
            flags |= FLAG_CONVERGED
    if best < 0:
        # every start failed: report the first start, flagged
        for i in range(m):
            outF[vb + i] = Q[i]
        flags |= FLAG_NUMERIC
        return -np.inf, total_it, flags, np.nan, np.nan, 0, -np.inf, n_ep
    for i in range(m):
        F[i] = ep_F[eF0 + best * mm + i]
        outF[vb + i] = F[i]
    best_ll = ep_ll[e0 + best]
    n_max, second = _maxima(ep_F, ep_kind, ep_ll, e0, eF0, n_ep, mm, F, T, vb, m)
    if n_max >= 2:
        flags |= FLAG_MULTIPLE_MAXIMA
    if second >= best_ll - 1e-9 * max(1.0, abs(best_ll)):
        flags |= FLAG_NONUNIQUE
    if ep_kind[e0 + best] == KIND_SINGULAR:
        flags |= FLAG_SINGULAR | FLAG_NONUNIQUE
    for e in range(n_ep):
        if ep_kind[e0 + e] == KIND_SADDLE:
            flags |= FLAG_SADDLE_ESCAPED
    if not use_newton:
        flags |= FLAG_EM_ONLY
    if numeric:
        flags |= FLAG_NUMERIC
    if unverified:
        flags |= FLAG_UNVERIFIED
    # residual of the papers' equations (4)-(6) and projected gradient at the answer
    ev = _evaluate(F, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, f0, C0, C1, cst,
                   np.int64(1), grad, emn, fseg, ws, o1, o2)
    res = 0.0
    for i in range(m):
        t = T[vb + i]
        if t > 0.0:
            r = abs(emn[i] / t - F[i])
            if r > res:
                res = r
    pg = _pgrad(F, grad, T, vb, m)
    return ev[1], total_it, flags, res, pg, n_max, second, n_ep


@kernel(helper=True)
def _ep_capacity(start_off, s, m, n_random, default_starts):
    mm = m if m > 0 else 1
    n_user = (start_off[s + 1] - start_off[s]) // mm
    return n_user + n_random + (2 if default_starts == 1 else 0) + 2 * MAX_ESCAPES


@kernel
def endpoint_layout(var_off, start_off, n_random, default_starts):
    """``(ep_off, epF_off)``: per system, the slots for its start end points and their F."""
    S = var_off.shape[0] - 1
    ep_off = np.zeros(S + 1, dtype=np.int64)
    epF_off = np.zeros(S + 1, dtype=np.int64)
    for s in range(S):
        m = var_off[s + 1] - var_off[s]
        cap = _ep_capacity(start_off, np.int64(s), np.int64(m), np.int64(n_random),
                           np.int64(default_starts))
        ep_off[s + 1] = ep_off[s] + cap
        epF_off[s + 1] = epF_off[s] + cap * (m if m > 0 else 1)
    return ep_off, epF_off


def _solve_block(b, nb, var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var,
                 cls_mult, f0s, consts, start_off, start_vals, n_random, seed, default_starts,
                 max_iter, em_warm, tol, newton_max, order, ep_off, epF_off, sys_id, F, stat_f,
                 stat_i, ep_F, ep_ll, ep_kind, ep_it):
    """Solve the systems ``order[b::nb]`` (one work block of :func:`solve_systems`).

    A Python loop over the compiled :func:`_solve_system` (``nogil``): a compiled loop
    would link the solver's whole closure once more and re-optimize it (1.9 of the
    warm-up's CPU-s), for a call overhead of microseconds per system. Every system writes
    only its own slots of ``F``, ``stat_f`` (loglik, residual, pgrad, second loglik),
    ``stat_i`` (iterations, flags, maxima, end points) and the ``ep_*`` arrays.
    """
    n_random, seed, default_starts = int(n_random), int(seed), int(default_starts)
    max_iter, em_warm, tol, newton_max = int(max_iter), int(em_warm), float(tol), int(newton_max)
    for s in order[b::nb].tolist():
        e0 = int(ep_off[s])
        r = _solve_system(s, var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var,
                          cls_mult, f0s, consts, start_off, start_vals, n_random, seed,
                          default_starts, max_iter, em_warm, tol, newton_max, F, ep_F, ep_ll,
                          ep_kind, ep_it, e0, int(ep_off[s + 1]) - e0, int(epF_off[s]),
                          int(sys_id[s]))
        stat_f[0, s] = r[0]
        stat_i[0, s] = r[1]
        stat_i[1, s] = r[2]
        stat_f[1, s] = r[3]
        stat_f[2, s] = r[4]
        stat_i[2, s] = r[5]
        stat_f[3, s] = r[6]
        stat_i[3, s] = r[7]


@threaded(_solve_system)
def solve_systems(var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult,
                  f0s, consts, start_off, start_vals, n_random, seed, default_starts, max_iter,
                  em_warm, tol, newton_max, order, nblocks, ep_off, epF_off, sys_id):
    """Solve the packed systems listed in ``order``, on the thread pool.

    ``order`` lists the systems to solve (most expensive first); ``nblocks`` blocks of
    systems are dealt round-robin from it, each solved by :func:`_solve_block` (a loop
    over the ``nogil`` kernel :func:`_solve_system`) on
    :func:`fastpriv._threads.run_chunks`. ``sys_id[s]`` identifies system s
    for its seeded random starts (so a system packed on its own — the single-system path —
    gets the same starts as inside a batch).

    Returns ``(F, loglik, iterations, flags, residual, pgrad, n_maxima, second_loglik,
    n_endpoints, ep_F, ep_ll, ep_kind, ep_it)``; entries of systems not in ``order`` are
    unspecified. System s's start end points are ``ep_*[ep_off[s]:ep_off[s] + n_endpoints[s]]``
    (``ep_F`` row-major with m_s columns from ``epF_off[s]``).
    """
    S = var_off.shape[0] - 1
    F = np.zeros(int(var_off[S]), dtype=np.float64)
    stat_f = np.full((4, S), np.nan, dtype=np.float64)
    stat_i = np.zeros((4, S), dtype=np.int64)
    ep_F = np.zeros(int(epF_off[S]), dtype=np.float64)
    ep_ll = np.zeros(int(ep_off[S]), dtype=np.float64)
    ep_kind = np.zeros(int(ep_off[S]), dtype=np.int64)
    ep_it = np.zeros(int(ep_off[S]), dtype=np.int64)
    nb = max(1, min(int(nblocks), int(order.shape[0])))
    run_chunks(lambda b: _solve_block(b, nb, var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w,
                                     cls_off, cls_var, cls_mult, f0s, consts, start_off,
                                     start_vals, n_random, seed, default_starts, max_iter,
                                     em_warm, tol, newton_max, order, ep_off, epF_off, sys_id,
                                     F, stat_f, stat_i, ep_F, ep_ll, ep_kind, ep_it), nb)
    return (F, stat_f[0], stat_i[0], stat_i[1], stat_f[1], stat_f[2], stat_i[2], stat_f[3],
            stat_i[3], ep_F, ep_ll, ep_kind, ep_it)


def evaluate_system(s, var_off, T, C0, C1, grp_off, grp_n, grp_N, grp_w, cls_off, cls_var,
                    cls_mult, f0s, consts, F):
    """``(ok, loglik, grad, em_map, hessian_ok, H)`` of system ``s`` at ``F`` (tests, reports).

    ``em_map`` is the right-hand side of the papers' equations (4)-(6). A Python driver of
    the solver's compiled :func:`_evaluate` and :func:`_hessian` (called with the solver's
    argument types), so it compiles nothing of its own.
    """
    vb = int(var_off[s])
    m = int(var_off[s + 1]) - vb
    gb = int(grp_off[s])
    ge = int(grp_off[s + 1])
    ws, fseg, fsub, o1, o2, q1, q2, r1, r2, gcls, rep = _system_workspace(gb, ge, grp_n, grp_N,
                                                                        cls_off)
    mm = m if m > 0 else 1
    Fl = np.empty(mm, dtype=np.float64)
    Fl[:m] = F[:m]
    grad = np.zeros(mm, dtype=np.float64)
    emn = np.zeros(mm, dtype=np.float64)
    H = np.zeros(mm * mm, dtype=np.float64)
    Ha = np.zeros(mm * mm, dtype=np.float64)
    ev = _evaluate(Fl, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult,
                   float(f0s[s]), C0, C1, float(consts[s]), 1, grad, emn, fseg, ws, o1, o2)
    emap = np.empty(m, dtype=np.float64)
    for i in range(m):
        t = T[vb + i]
        emap[i] = emn[i] / t if t > 0.0 else Fl[i]
    hok = _hessian(Fl, vb, m, gb, ge, grp_n, grp_w, cls_off, cls_var, cls_mult, float(f0s[s]),
                   C0, C1, H, Ha, fseg, fsub, ws, o1, o2, q1, q2, r1, r2, gcls, rep)
    return ev[0], ev[1], grad[:m].copy(), emap, hok, H[:m * m].copy()


# ====================================================================== building systems
@kernel
def _log_binom(N, n):
    return math.lgamma(N + 1.0) - math.lgamma(n + 1.0) - math.lgamma(N - n + 1.0)


@kernel
def count_mixed(goff, order, var_rows, gcount, sys_a, sys_x, m_of_a, c, n_chunks, ng, nc, nv):
    """Count the mixed groups of systems ``s = c, c + n_chunks, …`` and their classes.

    ``ng[s]`` mixed groups with a variable, ``nc[s]`` their classes, ``nv[s]`` mixed groups
    without one.

    The sizing pass of :func:`build_systems` (serial, ``nogil``; one chunk of systems).
    """
    S = sys_a.shape[0]
    G = goff.shape[0] - 1
    R = order.shape[0]
    for s in range(c, S, n_chunks):
        a = sys_a[s]
        x = sys_x[s]
        m = m_of_a[a]
        seen = np.full(m + 1, -1, dtype=np.int64)
        cg = 0
        cc = 0
        cv = 0
        for g in range(G):
            n = gcount[x * G + g]
            N = goff[g + 1] - goff[g]
            if n == 0 or n == N:
                continue
            has = False
            cls = 0
            for t in range(goff[g], goff[g + 1]):
                v = var_rows[a * R + order[t]]
                key = v if v >= 0 else m
                if v >= 0:
                    has = True
                if seen[key] != g:
                    seen[key] = g
                    cls += 1
            if has:
                cg += 1
                cc += cls
            else:
                cv += 1
        ng[s] = cg
        nc[s] = cc
        nv[s] = cv


@kernel
def fill_systems(goff, order, var_rows, gcount, sys_a, sys_x, m_of_a, var_off, grp_off,
                 csys, vsys, c, n_chunks, T, C0, C1, grp_n, grp_N, cls_off, cls_var, cls_mult,
                 k0, k1, lb):
    """Fill systems ``s = c, c + n_chunks, …`` into the arrays sized by :func:`count_mixed`.

    The packing pass of :func:`build_systems` (serial, ``nogil``): system s writes only
    its own variables, groups and classes. The constant part of its log-likelihood is left
    as counts — ``k0[s]`` tuples at the fixed rate's log(1 − f0), ``k1[s]`` at log f0 — and
    the terms log C(N, n) of its mixed groups without a variable (``lb[vsys[s]:vsys[s+1]]``),
    so that it can be summed exactly, in any split of the groups.
    """
    G = goff.shape[0] - 1
    R = order.shape[0]
    S = sys_a.shape[0]
    for s in range(c, S, n_chunks):
        a = sys_a[s]
        x = sys_x[s]
        m = m_of_a[a]
        vb = var_off[s]
        seen = np.full(m + 1, -1, dtype=np.int64)
        slot = np.zeros(m + 1, dtype=np.int64)
        kg = grp_off[s]
        kc = csys[s]
        kv = vsys[s]
        for g in range(G):
            n = gcount[x * G + g]
            N = goff[g + 1] - goff[g]
            if n == 0 or n == N:
                for t in range(goff[g], goff[g + 1]):
                    v = var_rows[a * R + order[t]]
                    if v >= 0:
                        T[vb + v] += 1.0
                        if n == 0:
                            C0[vb + v] += 1.0
                        else:
                            C1[vb + v] += 1.0
                    elif n == 0:
                        k0[s] += 1
                    else:
                        k1[s] += 1
                continue
            has = False
            for t in range(goff[g], goff[g + 1]):
                if var_rows[a * R + order[t]] >= 0:
                    has = True
                    break
            if not has:
                lb[kv] = _log_binom(np.float64(N), np.float64(n))
                kv += 1
                k1[s] += n
                k0[s] += N - n
                continue
            cls_off[kg] = kc
            grp_n[kg] = n
            grp_N[kg] = N
            for t in range(goff[g], goff[g + 1]):
                v = var_rows[a * R + order[t]]
                key = v if v >= 0 else m
                if v >= 0:
                    T[vb + v] += 1.0
                if seen[key] != g:
                    seen[key] = g
                    slot[key] = kc
                    cls_var[kc] = v if v >= 0 else -1
                    cls_mult[kc] = 1
                    kc += 1
                else:
                    cls_mult[slot[key]] += 1
            kg += 1


def _offsets(sizes):
    off = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


@threaded(count_mixed, fill_systems)
def build_systems(goff, order, var_rows, gcount, sys_a, sys_x, m_of_a):
    """Pack the (attribute set, value) systems of a release (or of a set of its groups).

    Parameters
    ----------
    goff, order : int64
        Rows of group g are ``order[goff[g]:goff[g+1]]``.
    var_rows : int32 (n_sets * n_rows,)
        Variable (reliable signature index) of every row per attribute set, -1 unreliable.
    gcount : int64 (n_x * G,)
        Occurrences of value (set) x in group g at ``x * G + g``.
    sys_a, sys_x : int64 (S,)
        Attribute set and value of each system.
    m_of_a : int64 (n_sets,)
        Number of variables of each attribute set.

    Returns
    -------
    var_off, T, C0, C1, grp_off, grp_n, grp_N, cls_off, cls_var, cls_mult, k0, k1, vsys, lb
        The groups of every system; its constant: ``k0`` / ``k1`` tuples at the fixed rate
        (log(1 − f0) / log f0) and the terms log C(N, n) in ``lb[vsys[s]:vsys[s+1]]``.

    """
    S = sys_a.shape[0]
    nch = max(1, min(S, current_threads()))
    ng = np.zeros(S, dtype=np.int64)
    nc = np.zeros(S, dtype=np.int64)
    nv = np.zeros(S, dtype=np.int64)
    run_chunks(lambda c: count_mixed(goff, order, var_rows, gcount, sys_a, sys_x, m_of_a, c, nch,
                                     ng, nc, nv), nch)
    var_off = _offsets(np.asarray(m_of_a)[np.asarray(sys_a)])
    grp_off = _offsets(ng)
    csys = _offsets(nc)
    vsys = _offsets(nv)
    V = int(var_off[S])
    T = np.zeros(V, dtype=np.float64)
    C0 = np.zeros(V, dtype=np.float64)
    C1 = np.zeros(V, dtype=np.float64)
    NG = int(grp_off[S])
    NC = int(csys[S])
    grp_n = np.empty(NG, dtype=np.int64)
    grp_N = np.empty(NG, dtype=np.int64)
    cls_off = np.empty(NG + 1, dtype=np.int64)
    cls_off[NG] = NC
    cls_var = np.empty(NC, dtype=np.int64)
    cls_mult = np.empty(NC, dtype=np.int64)
    k0 = np.zeros(S, dtype=np.int64)
    k1 = np.zeros(S, dtype=np.int64)
    lb = np.empty(int(vsys[S]), dtype=np.float64)
    run_chunks(lambda c: fill_systems(goff, order, var_rows, gcount, sys_a, sys_x, m_of_a,
                                      var_off, grp_off, csys, vsys, c, nch, T, C0, C1, grp_n,
                                      grp_N, cls_off, cls_var, cls_mult, k0, k1, lb), nch)
    return var_off, T, C0, C1, grp_off, grp_n, grp_N, cls_off, cls_var, cls_mult, k0, k1, vsys, lb


# ====================================================================== merging groups
@kernel
def _mix(h, v):
    """Fold an integer into a 64-bit hash."""
    h ^= np.uint64(v) + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) + (h >> np.uint64(2))
    return h * np.uint64(0x100000001B3)


@kernel(helper=True)
def _same_group(k, k2, grp_n, cls_off, cv, cm):
    if grp_n[k] != grp_n[k2]:
        return False
    a = cls_off[k]
    a2 = cls_off[k2]
    K = cls_off[k + 1] - a
    if cls_off[k2 + 1] - a2 != K:
        return False
    for i in range(K):
        if cv[a + i] != cv[a2 + i] or cm[a + i] != cm[a2 + i]:
            return False
    return True


@kernel
def sort_hash_groups(cls_off, grp_n, cv, cm, h, c, n_chunks):
    """Sort the classes of groups ``k = c, c + n_chunks, …`` by variable and hash them into ``h``.

    The first pass of :func:`dedupe_groups` (serial, ``nogil``; in place on ``cv``, ``cm``).
    """
    NG = grp_n.shape[0]
    for k in range(c, NG, n_chunks):
        a = cls_off[k]
        b = cls_off[k + 1]
        for i in range(a + 1, b):
            v = cv[i]
            mu = cm[i]
            j = i - 1
            while j >= a and cv[j] > v:
                cv[j + 1] = cv[j]
                cm[j + 1] = cm[j]
                j -= 1
            cv[j + 1] = v
            cm[j + 1] = mu
        hh = np.uint64(1469598103934665603)
        hh = _mix(hh, np.int64(grp_n[k]))
        hh = _mix(hh, np.int64(b - a))
        for i in range(a, b):
            hh = _mix(hh, np.int64(cv[i] + 1))
            hh = _mix(hh, np.int64(cm[i]))
        h[k] = hh


@kernel(helper=True)
def _profile_less(k, k2, grp_n, cls_off, cv, cm):
    """Whether group ``k`` comes before ``k2`` in content order.

    By n, then the number of classes, then the classes (variable, multiplicity) in order.
    """
    if grp_n[k] != grp_n[k2]:
        return grp_n[k] < grp_n[k2]
    a = cls_off[k]
    a2 = cls_off[k2]
    K = cls_off[k + 1] - a
    K2 = cls_off[k2 + 1] - a2
    if K != K2:
        return K < K2
    for i in range(K):
        if cv[a + i] != cv[a2 + i]:
            return cv[a + i] < cv[a2 + i]
        if cm[a + i] != cm[a2 + i]:
            return cm[a + i] < cm[a2 + i]
    return False


@kernel
def mark_leaders(grp_off, grp_n, cls_off, cv, cm, h, perm, lead, nu, ncl, c, n_chunks):
    """Order the groups of systems ``s = c, c + n_chunks, …``; mark each first copy.

    The second pass of :func:`dedupe_groups` (serial, ``nogil``): by hash, groups of equal
    hash by their content (an insertion sort: runs of equal hash are copies), so the order
    depends on the groups present, not on the order they came in. ``nu[s]`` / ``ncl[s]``
    count the distinct groups and their classes.
    """
    S = grp_off.shape[0] - 1
    for s in range(c, S, n_chunks):
        g0 = grp_off[s]
        g1 = grp_off[s + 1]
        idx = np.argsort(h[g0:g1], kind="mergesort")
        for i in range(g1 - g0):
            perm[g0 + i] = g0 + idx[i]
        for i in range(g0 + 1, g1):
            k = perm[i]
            j = i - 1
            while j >= g0 and h[perm[j]] == h[k] and _profile_less(
                    np.int64(k), np.int64(perm[j]), grp_n, cls_off, cv, cm):
                perm[j + 1] = perm[j]
                j -= 1
            perm[j + 1] = k
        cu = 0
        cc = 0
        for i in range(g0, g1):
            k = perm[i]
            same = False
            if i > g0:
                k2 = perm[i - 1]
                if h[k] == h[k2]:
                    same = _same_group(np.int64(k), np.int64(k2), grp_n, cls_off, cv, cm)
            if not same:
                lead[i] = True
                cu += 1
                cc += cls_off[k + 1] - cls_off[k]
        nu[s] = cu
        ncl[s] = cc


@kernel
def emit_unique(grp_off, grp_n, grp_N, grp_w, cls_off, cv, cm, perm, lead, ngo, nco, n2, N2, w2,
                co2, cv2, cm2, chunk, n_chunks):
    """Write the distinct groups of systems ``s = c, c + n_chunks, …`` with their weights.

    The last pass of :func:`dedupe_groups` (serial, ``nogil``).
    """
    S = grp_off.shape[0] - 1
    for s in range(chunk, S, n_chunks):
        g = ngo[s] - 1
        c = nco[s]
        for i in range(grp_off[s], grp_off[s + 1]):
            k = perm[i]
            if lead[i]:
                g += 1
                n2[g] = grp_n[k]
                N2[g] = grp_N[k]
                co2[g] = c
                for t in range(cls_off[k], cls_off[k + 1]):
                    cv2[c] = cv[t]
                    cm2[c] = cm[t]
                    c += 1
            w2[g] += grp_w[k]


@threaded(sort_hash_groups, mark_leaders, emit_unique)
def dedupe_groups(grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult):
    """Merge the identical mixed groups of each system into one group with a weight.

    Two groups are identical when they have the same n_k and the same classes (variable,
    multiplicity); their likelihood factors, scores, Hessians and EM contributions are equal,
    so one copy with weight w (the summed weights ``grp_w`` of the copies: 1 each for a
    release's groups) gives exactly the same system. The distinct groups come out ordered
    by a hash of their content, then by content: the same order for the same groups in any
    order, so the groups of several parts, concatenated and merged again, pack as those of
    the whole. Returns ``(grp_off, grp_n, grp_N, grp_w, cls_off, cls_var, cls_mult)``.
    """
    S = grp_off.shape[0] - 1
    NG = grp_n.shape[0]
    nch = max(1, current_threads())
    cv = np.array(cls_var, dtype=np.int64)
    cm = np.array(cls_mult, dtype=np.int64)
    h = np.empty(NG, dtype=np.uint64)
    run_chunks(lambda c: sort_hash_groups(cls_off, grp_n, cv, cm, h, c, nch), min(nch, NG))
    perm = np.empty(NG, dtype=np.int64)
    lead = np.zeros(NG, dtype=np.bool_)
    nu = np.zeros(S, dtype=np.int64)
    ncl = np.zeros(S, dtype=np.int64)
    run_chunks(lambda c: mark_leaders(grp_off, grp_n, cls_off, cv, cm, h, perm, lead, nu, ncl, c,
                                      nch), min(nch, S))
    ngo = _offsets(nu)
    nco = _offsets(ncl)
    G2 = int(ngo[S])
    n2 = np.empty(G2, dtype=np.int64)
    N2 = np.empty(G2, dtype=np.int64)
    w2 = np.zeros(G2, dtype=np.float64)
    co2 = np.empty(G2 + 1, dtype=np.int64)
    co2[G2] = nco[S]
    cv2 = np.empty(int(nco[S]), dtype=np.int64)
    cm2 = np.empty(int(nco[S]), dtype=np.int64)
    run_chunks(lambda c: emit_unique(grp_off, grp_n, grp_N, grp_w, cls_off, cv, cm, perm, lead,
                                     ngo, nco, n2, N2, w2, co2, cv2, cm2, c, nch), min(nch, S))
    return ngo, n2, N2, w2, co2, cv2, cm2
