"""Possible-world kernels: binary-model ESP posteriors, enumeration, multi-valued DP and Ryser.

Models (spec ``robustness.md``)
-------------------------------
A group holds tuples t_0..t_{N-1} and a multiset of sensitive values; a *possible world*
is a distinct assignment of the multiset to the tuples, weighted by the product of the
tuples' background probabilities.

* **Binary model** (one value x at a time): tuple j is x with weight f_j, "not x" with
  1 - f_j; n = #x in the group. With E_d(f) = [z^d] prod_i ((1 - f_i) + f_i z)::

      p_j = f_j E_{n-1}(f_{-j}) / E_n(f)

  undefined iff E_n(f) = 0, i.e. more than n tuples have f = 1 or fewer than n have f > 0.
* **Multi-valued model**: an N x K matrix P (row j = tuple, column k = distinct value of
  the group, P[j, k] = p(sig_j : value_k)) and multiplicities m_k (sum m_k = N); a world
  assigns value k to exactly m_k tuples and weighs prod_j P[j, w_j].

Reusable device functions (contracts for other kernels, e.g. the foreground EM/Newton)
-------------------------------------------------------------------------------------
All are ``@kernel`` functions callable from other kernels. To keep **one compiled
specialization** each (tests count ``dispatcher.signatures``), call them only with
*writable* C-contiguous 1-D ``float64`` arrays that you allocated inside your kernel
(``np.empty``), ``int64`` integer scalars (cast with ``np.int64(...)`` when reading from an
int32 array) and ``float64`` floats. Segment arrays are *local*: the segment's values start
at index 0.

``esp_defined(f, lo, N, n) -> bool``
    E_n > 0 for the N entries of ``f`` from ``lo`` (exact structural test; inlined).
``esp_plan(N, n, limit) -> (flip, m, b, nc, size)``
    Work plan of :func:`loo_core`: ``flip`` when 2n > N (the complement "not x" with
    N - n occurrences is computed instead — same result, cost O(N·min(n, N-n))); ``m`` the
    truncation degree; prefix rows kept in blocks of ``b`` tuples with ``nc`` checkpoints
    (``b = N`` unless N·(m+1) > ``limit`` doubles, then ``b ≈ √N``: memory O(√N·m), prefix
    computed twice); ``size`` = length of the workspace ``ws`` that :func:`loo_core` needs.
``loo_core(fseg, N, n, ws, out1, out2, mode, limit) -> (status, log_E)``
    The stable prefix/suffix algorithm. ``mode == 0``: ``out1[j] = p_j`` (posterior of
    tuple j being x). ``mode == 1``: leave-one-out ratios ``out1[j] = a_j =
    E_{n-1}(f_{-j}) / E_n(f)`` and ``out2[j] = b_j = E_n(f_{-j}) / E_n(f)``, so that
    p_j = f_j a_j, f_j a_j + (1 - f_j) b_j = 1 and ∂ log E_n / ∂ f_j = a_j - b_j (the score
    of the foreground likelihood; a_j can overflow to +inf when E_n(f) < ~1e-308 · E_{n-1},
    e.g. a lone tuple with f = 5e-324 — use mode 0 for posteriors, which stay finite).
    ``log_E = log E_n(f)``. ``status``: ``STATUS_OK``;
    ``STATUS_UNDEFINED`` (E_n = 0; outputs NaN, ``log_E = -inf``); ``STATUS_LOGSPACE``
    (a denominator fell below 1e-280 in the rescaled float path, so the segment was
    recomputed entirely in log space — same outputs, slower). ``ws`` has at least
    ``esp_plan(...)[4]`` entries; ``out1``/``out2`` at least N (``out2`` is not touched
    in mode 0). Never divides polynomials: A_j = Σ P_{j-1}[a] S_{j+1}[n-1-a],
    B_j = Σ P_{j-1}[a] S_{j+1}[n-a], p_j = f_j A_j / (f_j A_j + (1-f_j) B_j).
``loo_core_log(...)``
    The same in log space (used automatically by :func:`loo_core`).
``posterior_small(f, lo, N, n, ws, out, olo) -> (status, log_E)``
    Closed form used by :func:`loo_core` (mode 0) and the batched kernel when
    min(n, N - n) <= 1 (odds ratios; the segment must be defined); reads ``f[lo:lo+N]``,
    writes ``out[olo:olo+N]``. Compiled ``inline="always"``: any array types.

The plain coefficient recursion E_0..E_n (rescaled, and its log-space twin), which no
production path calls, is the tests' oracle (``tests/kernels_reference.py``).

Batched entry points (called from Python with read-only inputs)
---------------------------------------------------------------
``binary_posteriors_csr(offsets, f, n, limit, nblocks)``: every segment
``f[offsets[s]:offsets[s+1]]`` with its count ``n[s]``, in parallel over cost-balanced
blocks of segments -> ``(p, status, log_E)``. ``binary_enumerate``: possible-world
enumeration (oracle, exact for small groups). ``mv_enumerate``, ``mv_dp`` (layered DP over
the multiset of remaining values, all terms positive — the default exact multi-valued
method), ``mv_ryser`` (Ryser's inclusion–exclusion over column multiplicities in reflected
mixed-radix Gray-code order; alternating signs, so it reports a cancellation ratio) and the
batched ``mv_posteriors_csr``. Audit helpers (``gather_segments``, ``gather_f``,
``reduce_segments``, ``absent_certain``) build and reduce the segment layout.

Numerics: every product of probabilities is rescaled (binary: running log-scale;
multi-valued: rows and columns of P are normalised first — posteriors are invariant to
both — and every DP layer is renormalised), so groups of any size neither underflow nor
overflow. Exact zeros and ones are handled exactly (structural tests, no log(0) in the
float path).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import Threaded, kernel
from .._threads import chunk_bounds, current_threads, run_chunks

STATUS_OK = 0
STATUS_UNDEFINED = 1
STATUS_LOGSPACE = 2
STATUS_UNDERFLOW = 3

METHOD_DP = 0
METHOD_RYSER = 1
METHOD_ENUMERATE = 2

#: Prefix tables larger than this many doubles switch to √N checkpointing.
PREFIX_LIMIT = 1 << 20

_RESCALE = 1e-100
_RYSER_MAX_CANCEL = 1e10
_NOT_SMALL = 99
_MV_TINY = 1e-150
_DEN_MIN = 1e-280


# ====================================================================== small helpers
@kernel(helper=True)
def _log0(x):
    """log(x) with log(0) = -inf (no exception, no warning)."""
    if x <= 0.0:
        return -np.inf
    return math.log(x)


@kernel(helper=True)
def _lae(a, b):
    """log(exp(a) + exp(b)) for a, b possibly -inf."""
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + math.log1p(math.exp(b - a))


# ====================================================================== binary model: ESP
@kernel(inline="always")
def _factor(f, flip):
    """``(up, stay)`` of one tuple's factor (stay + up·z).

    (f, 1 − f), or (1 − f, f) for the complement count when ``flip`` (2n > N).
    """
    if flip:
        return 1.0 - f, f
    return f, 1.0 - f


@kernel(inline="always")
def esp_defined(f, lo, N, n):
    """Test E_n(f_lo..f_{lo+N-1}) > 0 exactly: #(f = 1) <= n <= #(f > 0)."""
    ones = 0
    pos = 0
    for i in range(lo, lo + N):
        v = f[i]
        if v >= 1.0:
            ones += 1
        if v > 0.0:
            pos += 1
    return ones <= n and n <= pos


@kernel
def esp_plan(N, n, limit):
    """``(flip, m, b, nc, size)``: see the module docstring."""
    flip = 2 * n > N
    m = N - n if flip else n
    w = m + 1
    if N * w <= limit or N <= 1:
        b = N if N > 0 else 1
    else:
        b = int(math.sqrt(N))
        while b * b < N:
            b += 1
    nc = (N + b - 1) // b
    if nc < 1:
        nc = 1
    size = nc * w + nc + b * w + b + w
    if size < N:
        size = N                     # posterior_small keeps N odds
    return flip, m, b, nc, size


@kernel(inline="always")
def _esp_row(ws, src, dst, top, m, stay, up):
    """Row ``ws[src:]`` times (stay + up·z), truncated at degree m, into ``ws[dst:]``.

    ``dst`` may equal ``src`` (in place: degrees are updated downwards and the new top entry is
    written first, so entries above ``top`` are never read). Returns ``(new_top, row_sum)``.
    """
    mx = 0.0
    if top < m:
        v = up * ws[src + top]
        ws[dst + top + 1] = v
        mx = v
    for d in range(top, 0, -1):
        v = stay * ws[src + d] + up * ws[src + d - 1]
        ws[dst + d] = v
        mx += v
    v = stay * ws[src]
    ws[dst] = v
    mx += v
    if top < m:
        top += 1
    return top, mx


@kernel(helper=True)
def _fill_nan(out1, out2, N, mode):
    for j in range(N):
        out1[j] = np.nan
        if mode == 1:
            out2[j] = np.nan


@kernel(inline="always")
def _log_row(ws, src, dst, m, lsv, lu):
    """Log-space row ``ws[src:]`` times (stay + up·z) into ``ws[dst:]``, degrees 0..m.

    ``lsv`` = log stay, ``lu`` = log up; ``dst`` may equal ``src`` (degrees go downwards).
    """
    for d in range(m, 0, -1):
        ws[dst + d] = _lae(lsv + ws[src + d], lu + ws[src + d - 1])
    ws[dst] = lsv + ws[src]


@kernel
def loo_core_log(fseg, N, n, ws, out1, out2, mode, limit):
    """Log-space twin of :func:`loo_core` (same workspace, same outputs)."""
    if not esp_defined(fseg, np.int64(0), N, n):
        _fill_nan(out1, out2, N, mode)
        return STATUS_UNDEFINED, -np.inf
    flip, m, b, nc, size = esp_plan(N, n, limit)
    w = m + 1
    CK = 0
    BLK = nc * w + nc
    SUF = BLK + b * w + b
    ninf = -np.inf
    for d in range(w):
        ws[CK + d] = ninf
    ws[CK] = 0.0
    if nc > 1:
        R = BLK
        for d in range(w):
            ws[R + d] = ws[CK + d]
        last = (nc - 1) * b
        for i in range(last):
            fi = fseg[i]
            up, stay = _factor(fi, flip)
            lu = _log0(up)
            lsv = _log0(stay)
            _log_row(ws, R, R, m, lsv, lu)
            if (i + 1) % b == 0:
                c = (i + 1) // b
                for d in range(w):
                    ws[CK + c * w + d] = ws[R + d]
    for d in range(w):
        ws[SUF + d] = ninf
    ws[SUF] = 0.0
    log_e = ninf
    for c in range(nc - 1, -1, -1):
        j0 = c * b
        j1 = j0 + b
        if j1 > N:
            j1 = N
        for d in range(w):
            ws[BLK + d] = ws[CK + c * w + d]
        for t in range(1, j1 - j0):
            fi = fseg[j0 + t - 1]
            up, stay = _factor(fi, flip)
            lu = _log0(up)
            lsv = _log0(stay)
            prv = BLK + (t - 1) * w
            cur = BLK + t * w
            _log_row(ws, prv, cur, m, lsv, lu)
        for j in range(j1 - 1, j0 - 1, -1):
            P = BLK + (j - j0) * w
            fj = fseg[j]
            up, stay = _factor(fj, flip)
            lu = _log0(up)
            lsv = _log0(stay)
            la = ninf
            for a in range(m):
                la = _lae(la, ws[P + a] + ws[SUF + m - 1 - a])
            lb = ninf
            for a in range(m + 1):
                lb = _lae(lb, ws[P + a] + ws[SUF + m - a])
            lden = _lae(lu + la, lsv + lb)
            if lden == ninf:
                _fill_nan(out1, out2, N, mode)
                return STATUS_UNDEFINED, ninf
            if mode == 0:
                if flip:
                    out1[j] = math.exp(lsv + lb - lden)
                else:
                    out1[j] = math.exp(lu + la - lden)
            else:
                if flip:
                    out1[j] = math.exp(lb - lden)
                    out2[j] = math.exp(la - lden)
                else:
                    out1[j] = math.exp(la - lden)
                    out2[j] = math.exp(lb - lden)
            if j == 0:
                log_e = lden
            _log_row(ws, SUF, SUF, m, lsv, lu)
    return STATUS_LOGSPACE, log_e


@kernel(inline="always")  # small: inlined, any argument types
def _certain(fseg, lo, N, out1, olo, fill, skip):
    """Posteriors of a segment where every tuple's answer is certain; returns log E.

    Every ``out1[olo + i]`` is ``fill`` — 0 (x absent: E is the product of 1 - f) or 1
    (x everywhere: the product of f) — except tuple ``skip`` (−1: none), which gets
    1 - fill and is left out of the product (the one tuple with f = 1, resp. f = 0).
    The product is kept normal by folding it into its log (and, for f, logging tiny
    factors directly).
    """
    le = 0.0
    prod = 1.0            # running product, folded into le before it can underflow
    for i in range(N):
        out1[olo + i] = fill
        if i == skip:
            continue
        if fill == 0.0:
            prod *= 1.0 - fseg[lo + i]
        else:
            x = fseg[lo + i]
            if x < 1e-50:              # keep prod normal: log tiny factors directly
                le += math.log(x)
                continue
            prod *= x
        if prod < 1e-250:
            le += math.log(prod)
            prod = 1.0
    if skip >= 0:
        out1[olo + skip] = 1.0 - fill
    return le + math.log(prod)


@kernel(inline="always")
def posterior_small(fseg, lo, N, n, ws, out1, olo):
    """Posteriors (mode 0) of a *defined* segment with min(n, N - n) <= 1 in closed form.

    n = 0: p = 0; n = N: p = 1. n = 1: p_j = o_j / Σ o with odds o = f / (1 - f) (or the
    one tuple with f = 1 gets p = 1). n = N - 1: the lone "not x" has odds g = (1 - f)/f,
    p_j = Σ_{k≠j} g_k / Σ g with the leave-one-out sum from prefix and suffix sums (no
    cancellation; or the one tuple with f = 0 gets p = 0). Reads ``fseg[lo:lo+N]``, writes
    ``out1[olo:olo+N]``; ``ws`` needs N entries. Inlined into its callers (any array types).
    Returns ``(status, log_E)``; status 99 when the odds leave the normal float range
    (f below ~1e-290), in which case the caller uses the tables. O(N), no table: the
    common case of an audit (a value occurring once in its group) at the cost of a sum.
    """
    if n == 0:
        return STATUS_OK, _certain(fseg, lo, N, out1, olo, 0.0, np.int64(-1))
    if n == N:
        return STATUS_OK, _certain(fseg, lo, N, out1, olo, 1.0, np.int64(-1))
    le = 0.0
    prod = 1.0            # running product, folded into le before it can underflow
    if n == 1:
        one = -1
        for i in range(N):
            if fseg[lo + i] >= 1.0:
                one = i
        if one >= 0:
            return STATUS_OK, _certain(fseg, lo, N, out1, olo, 0.0, np.int64(one))
        tot = 0.0
        for i in range(N):
            fi = fseg[lo + i]
            q = 1.0 - fi
            o = fi / q
            ws[i] = o
            tot += o
            prod *= q
            if prod < 1e-250:
                le += math.log(prod)
                prod = 1.0
        if not tot >= 1e-290:          # odds near the subnormal range: use the tables
            return _NOT_SMALL, 0.0
        inv = 1.0 / tot
        for i in range(N):
            out1[olo + i] = ws[i] * inv
        return STATUS_OK, le + math.log(prod) + math.log(tot)
    # n == N - 1
    zero = -1
    for i in range(N):
        if fseg[lo + i] <= 0.0:
            zero = i
    if zero >= 0:
        return STATUS_OK, _certain(fseg, lo, N, out1, olo, 1.0, np.int64(zero))
    tot = 0.0
    for i in range(N):
        fi = fseg[lo + i]
        ws[i] = tot                       # Σ_{k<i} g_k
        tot += (1.0 - fi) / fi
        if fi < 1e-50:
            le += math.log(fi)
        else:
            prod *= fi
            if prod < 1e-250:
                le += math.log(prod)
                prod = 1.0
    if not (tot >= 1e-290 and tot <= 1e290):   # odds overflow (f ~ 1e-308): use the tables
        return _NOT_SMALL, 0.0
    suf = 0.0
    for j in range(N - 1, -1, -1):
        fj = fseg[lo + j]
        out1[olo + j] = (ws[j] + suf) / tot
        suf += (1.0 - fj) / fj
    return STATUS_OK, le + math.log(prod) + math.log(tot)


@kernel(helper=True)
def _checkpoints(fseg, ws, flip, m, b, nc, CKL, BLK):
    """Forward pass of :func:`loo_core`: prefix rows every b tuples into the checkpoints.

    Row c (degrees 0..m) at ``ws[c * (m + 1)]`` and its log scale at ``ws[CKL + c]``; the
    running row lives at ``ws[BLK]``. False when a row underflows to zero (log space then).
    """
    w = m + 1
    CK = 0
    R = BLK
    for d in range(w):
        ws[R + d] = ws[CK + d]
    lr = 0.0
    top = np.int64(0)
    last = (nc - 1) * b
    for i in range(last):
        fi = fseg[i]
        up, stay = _factor(fi, flip)
        top, mx = _esp_row(ws, R, R, top, m, stay, up)
        if mx < _RESCALE:            # the row sum (≥ its max) is tiny: rescale
            if mx == 0.0:
                return False
            for d in range(top + 1):
                ws[R + d] /= mx
            lr += math.log(mx)
        if (i + 1) % b == 0:
            c = (i + 1) // b
            for d in range(w):
                ws[CK + c * w + d] = ws[R + d]
            ws[CKL + c] = lr
    return True


#: :func:`posterior_small` as a called kernel (not inlined) for :func:`loo_core`'s small
#: segments: the same Python function, compiled on its own. Not inlined on purpose: with
#: the closed form inlined into ``loo_core`` the large-segment path of ``posterior_batch``
#: (20 segments of 3000, one thread) took 129 ms instead of 118 ms
#: (``python -m benchmarks.ab_commits``, probe ``posterior``); and a wrapper kernel that
#: inlines it cost 0.6-2.6 CPU-s of Numba IR inlining in every cold process.
posterior_small_call = kernel(posterior_small.py_func)


@kernel
def loo_core(fseg, N, n, ws, out1, out2, mode, limit):
    """Stable prefix/suffix leave-one-out ESP for one segment (see module docstring).

    Helpers in the hot loops are ``inline="always"`` (:func:`_esp_row`, :func:`_factor`,
    :func:`esp_defined`): a real call passing an array costs two atomic reference-count
    updates, more than the arithmetic of a step.
    """
    if not esp_defined(fseg, np.int64(0), N, n):
        _fill_nan(out1, out2, N, mode)
        return STATUS_UNDEFINED, -np.inf
    flip, m, b, nc, _ = esp_plan(N, n, limit)
    if m <= 1 and mode == 0:
        res = posterior_small_call(fseg, np.int64(0), N, n, ws, out1, np.int64(0))
        if res[0] != _NOT_SMALL:
            return res
    w = m + 1
    CK = 0
    CKL = nc * w
    BLK = CKL + nc
    BLKL = BLK + b * w
    SUF = BLKL + b
    for d in range(w):
        ws[CK + d] = 0.0
    ws[CK] = 1.0
    ws[CKL] = 0.0
    # forward pass: checkpoints every b tuples (only when the prefix table is blocked)
    if nc > 1 and not _checkpoints(fseg, ws, flip, m, b, nc, CKL, BLK):
        return loo_core_log(fseg, N, n, ws, out1, out2, mode, limit)
    # backward pass over blocks, suffix kept in one rolling row
    for d in range(w):
        ws[SUF + d] = 0.0
    ws[SUF] = 1.0
    ls = 0.0
    stop = np.int64(0)
    log_e = -np.inf
    for c in range(nc - 1, -1, -1):
        j0 = c * b
        j1 = j0 + b
        if j1 > N:
            j1 = N
        for d in range(w):
            ws[BLK + d] = ws[CK + c * w + d]
        ws[BLKL] = ws[CKL + c]
        top = j0 if j0 < m else m
        for t in range(1, j1 - j0):
            fi = fseg[j0 + t - 1]
            up, stay = _factor(fi, flip)
            cur = BLK + t * w
            top, mx = _esp_row(ws, cur - w, cur, top, m, stay, up)
            lf = 0.0
            if mx < _RESCALE:
                if mx == 0.0:
                    return loo_core_log(fseg, N, n, ws, out1, out2, mode, limit)
                for d in range(top + 1):
                    ws[cur + d] /= mx
                lf = math.log(mx)
            ws[BLKL + t] = ws[BLKL + t - 1] + lf
        for j in range(j1 - 1, j0 - 1, -1):
            P = BLK + (j - j0) * w
            fj = fseg[j]
            up, stay = _factor(fj, flip)
            ptop = j if j < m else m          # prefix (tuples < j) degree bound
            # A = sum_a P[a] S[m-1-a]; S is non-zero only for degrees <= stop
            # A = Σ_a P[a] S[m-1-a], B = Σ_a P[a] S[m-a] in one pass over the prefix row
            # (S is zero above ``stop``: it starts zeroed and only grows), two accumulators
            # each to halve the add-latency chains
            A = 0.0
            A1 = 0.0
            B = 0.0
            B1 = 0.0
            a = m - 1 - stop
            if a < 0:
                a = 0
            hi = ptop if ptop < m else m - 1          # a <= m - 1 in the pass
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
            if not den >= _DEN_MIN:
                return loo_core_log(fseg, N, n, ws, out1, out2, mode, limit)
            if mode == 0:
                # ratio first: stay·B or up·A alone may be subnormal
                if flip:
                    out1[j] = stay * (B / den)
                else:
                    out1[j] = up * (A / den)
            else:
                if flip:
                    out1[j] = B / den
                    out2[j] = A / den
                else:
                    out1[j] = A / den
                    out2[j] = B / den
            if j == 0:
                log_e = math.log(den) + ws[BLKL] + ls
                break
            # fold tuple j into the suffix
            stop, mx = _esp_row(ws, SUF, SUF, stop, m, stay, up)
            if mx < _RESCALE:
                if mx == 0.0:
                    return loo_core_log(fseg, N, n, ws, out1, out2, mode, limit)
                for d in range(stop + 1):
                    ws[SUF + d] /= mx
                ls += math.log(mx)
    return STATUS_OK, log_e


@kernel
def _balanced_bounds(offsets, n, nblocks):
    """Block boundaries over segments with about equal Σ N·(min(n, N-n)+1) cost."""
    S = n.shape[0]
    if S == 0:
        out = np.zeros(1, dtype=np.int64)
        return out
    cost = np.empty(S, dtype=np.float64)
    total = 0.0
    for s in range(S):
        N = offsets[s + 1] - offsets[s]
        k = n[s]
        if 2 * k > N:
            k = N - k
        c = float(N) * float(k + 1) + 16.0
        cost[s] = c
        total += c
    nb = nblocks
    if nb > S:
        nb = S
    if nb < 1:
        nb = 1
    bounds = np.empty(nb + 1, dtype=np.int64)
    bounds[0] = 0
    acc = 0.0
    blk = 1
    for s in range(S):
        acc += cost[s]
        while blk < nb and acc >= total * blk / nb:
            bounds[blk] = s + 1
            blk += 1
    while blk <= nb:
        bounds[blk] = S
        blk += 1
    return bounds


@kernel
def binary_posteriors_range(offsets, f, n, limit, s0, s1, p, status, log_e):
    """Posteriors of segments ``[s0, s1)`` of a CSR batch, into ``p``, ``status``, ``log_e``.

    One work block of :func:`binary_posteriors_csr` (serial, ``nogil``; scratch of its
    own).
    """
    size = 1
    nmax = 1
    for s in range(s0, s1):
        N = offsets[s + 1] - offsets[s]
        plan = esp_plan(N, np.int64(n[s]), np.int64(limit))
        if plan[4] > size:
            size = plan[4]
        if N > nmax:
            nmax = N
    ws = np.empty(size, dtype=np.float64)
    fs = np.empty(nmax, dtype=np.float64)
    o1 = np.empty(nmax, dtype=np.float64)
    o2 = np.empty(nmax, dtype=np.float64)
    for s in range(s0, s1):
        lo = offsets[s]
        N = offsets[s + 1] - lo
        ns = np.int64(n[s])
        if not esp_defined(f, lo, N, ns):
            for j in range(N):
                p[lo + j] = np.nan
            status[s] = STATUS_UNDEFINED
            log_e[s] = -np.inf
            continue
        m = ns if 2 * ns <= N else N - ns
        if m <= 1:                          # closed form, in place, no copies
            res = posterior_small(f, lo, N, ns, ws, p, lo)
            if res[0] != _NOT_SMALL:
                status[s] = res[0]
                log_e[s] = res[1]
                continue
        for j in range(N):
            fs[j] = f[lo + j]
        res = loo_core(fs, N, ns, ws, o1, o2, np.int64(0), np.int64(limit))
        for j in range(N):
            p[lo + j] = o1[j]
        status[s] = res[0]
        log_e[s] = res[1]


def _binary_posteriors_csr(offsets, f, n, limit, nblocks):
    """Posteriors of every segment of a CSR batch (parallel over balanced blocks).

    Parameters
    ----------
    offsets : int64 (S+1,)
        Segment s is ``f[offsets[s]:offsets[s+1]]`` (N_s ≥ 1 tuples).
    f : float64
        Background probabilities p(sig_j : x) in [0, 1].
    n : int64 (S,)
        Occurrences of x in each segment's group, 0 ≤ n_s ≤ N_s.
    limit, nblocks : int
        Prefix-table limit (see :func:`esp_plan`) and number of work blocks.

    Returns
    -------
    p : float64, like ``f`` (NaN for undefined segments)
    status : int8 (S,)
    log_e : float64 (S,), log E_n(f) per segment (-inf when undefined)

    """
    S = n.shape[0]
    p = np.empty(f.shape[0], dtype=np.float64)
    status = np.zeros(S, dtype=np.int8)
    log_e = np.empty(S, dtype=np.float64)
    bounds = _balanced_bounds(offsets, n, nblocks)
    run_chunks(lambda b: binary_posteriors_range(offsets, f, n, limit, bounds[b],
                                                 bounds[b + 1], p, status, log_e),
               bounds.shape[0] - 1)
    return p, status, log_e


binary_posteriors_csr = Threaded(_binary_posteriors_csr, binary_posteriors_range)


def _read_only(a):
    a.flags.writeable = False
    return a


def _binary_loo(f, n, limit, logspace, mode):
    """Run :func:`loo_core` on one segment: ``(status, out1, out2, log_E)``.

    ``mode`` 0 gives posteriors in ``out1``, 1 the leave-one-out ratios a, b;
    ``logspace=1`` forces the log-space path. A Python driver of the compiled ``loo_core``
    (called with the argument types of :func:`binary_posteriors_range`), so ``loo_core``
    is not linked and re-optimized inside one more kernel.
    """
    N = int(f.shape[0])
    ws = np.empty(int(esp_plan(N, int(n), int(limit))[4]), dtype=np.float64)
    fs = np.empty(max(N, 1), dtype=np.float64)
    fs[:N] = f
    a = np.empty(max(N, 1), dtype=np.float64)
    b = np.empty(max(N, 1), dtype=np.float64)
    core = loo_core_log if logspace == 1 else loo_core
    res = core(fs, N, int(n), ws, a, b, int(mode), int(limit))
    return res[0], a[:N].copy(), b[:N].copy(), res[1]


binary_loo = Threaded(_binary_loo, loo_core)


# ====================================================================== enumeration
@kernel
def binary_enumerate(f, n):
    """Enumerate the C(N, n) placements of x; returns ``(status, p, log_Z)``.

    Weights are accumulated relative to the running maximum log-weight (rescaling the
    accumulators when a larger world appears), so no product underflows.
    """
    N = f.shape[0]
    lf = np.empty(N, dtype=np.float64)
    l1 = np.empty(N, dtype=np.float64)
    for i in range(N):
        lf[i] = _log0(f[i])
        l1[i] = _log0(1.0 - f[i])
    acc = np.zeros(N, dtype=np.float64)
    total = 0.0
    shift = -np.inf
    idx = np.empty(max(n, 1), dtype=np.int64)
    for t in range(n):
        idx[t] = t
    mask = np.zeros(N, dtype=np.bool_)
    while True:
        for i in range(N):
            mask[i] = False
        for t in range(n):
            mask[idx[t]] = True
        lw = 0.0
        for i in range(N):
            lw += lf[i] if mask[i] else l1[i]
        if lw > -np.inf:
            if lw > shift:
                if shift > -np.inf:
                    sc = math.exp(shift - lw)
                    total *= sc
                    for i in range(N):
                        acc[i] *= sc
                shift = lw
            wgt = math.exp(lw - shift)
            total += wgt
            for t in range(n):
                acc[idx[t]] += wgt
        # next combination
        t = n - 1
        while t >= 0 and idx[t] == N - n + t:
            t -= 1
        if t < 0:
            break
        idx[t] += 1
        for u in range(t + 1, n):
            idx[u] = idx[u - 1] + 1
    p = np.empty(N, dtype=np.float64)
    if total == 0.0:
        for i in range(N):
            p[i] = np.nan
        return STATUS_UNDEFINED, p, -np.inf
    for i in range(N):
        p[i] = acc[i] / total
    return STATUS_OK, p, shift + math.log(total)


@kernel
def mv_enumerate(P, mult):
    """Enumerate the distinct permutations of the multiset; ``(status, post, log_Z)``.

    ``P`` is N x K, ``mult`` the multiplicity of each column's value (Σ = N);
    ``post[j, k]`` = p(t_j : value_k). Lexicographic next-permutation over the sorted
    multiset visits every distinct world once.
    """
    N = P.shape[0]
    K = P.shape[1]
    lp = np.empty((N, K), dtype=np.float64)
    for j in range(N):
        for k in range(K):
            lp[j, k] = _log0(P[j, k])
    a = np.empty(N, dtype=np.int64)
    pos = 0
    for k in range(K):
        for _ in range(mult[k]):
            a[pos] = k
            pos += 1
    acc = np.zeros((N, K), dtype=np.float64)
    total = 0.0
    shift = -np.inf
    while True:
        lw = 0.0
        for j in range(N):
            lw += lp[j, a[j]]
        if lw > -np.inf:
            if lw > shift:
                if shift > -np.inf:
                    sc = math.exp(shift - lw)
                    total *= sc
                    for j in range(N):
                        for k in range(K):
                            acc[j, k] *= sc
                shift = lw
            wgt = math.exp(lw - shift)
            total += wgt
            for j in range(N):
                acc[j, a[j]] += wgt
        # next permutation (lexicographic, handles repeats)
        i = N - 2
        while i >= 0 and a[i] >= a[i + 1]:
            i -= 1
        if i < 0:
            break
        t = N - 1
        while a[t] <= a[i]:
            t -= 1
        tmp = a[i]
        a[i] = a[t]
        a[t] = tmp
        lo = i + 1
        hi = N - 1
        while lo < hi:
            tmp = a[lo]
            a[lo] = a[hi]
            a[hi] = tmp
            lo += 1
            hi -= 1
    post = np.empty((N, K), dtype=np.float64)
    if total == 0.0:
        for j in range(N):
            for k in range(K):
                post[j, k] = np.nan
        return STATUS_UNDEFINED, post, -np.inf
    for j in range(N):
        for k in range(K):
            post[j, k] = acc[j, k] / total
    return STATUS_OK, post, shift + math.log(total)


# ====================================================================== multi-valued model
@kernel(helper=True)
def mv_balance(Pl, N, K, mult):
    """Normalise rows then columns of the N x K block ``Pl`` (flat, in place) to max 1.

    Returns the log of the factor removed from Z = Σ_w Π_j P[j, w_j] (each world uses one
    entry per row and column k exactly m_k times, so posteriors are unchanged), or -inf
    when a row, or a column with m_k > 0, is entirely zero (no world has positive weight).
    """
    logc = 0.0
    for j in range(N):
        mx = 0.0
        for k in range(K):
            v = Pl[j * K + k]
            if v > mx:
                mx = v
        if mx == 0.0:
            return -np.inf
        for k in range(K):
            Pl[j * K + k] /= mx
        logc += math.log(mx)
    for k in range(K):
        mx = 0.0
        for j in range(N):
            v = Pl[j * K + k]
            if v > mx:
                mx = v
        if mx == 0.0:
            if mult[k] > 0:
                return -np.inf
            continue
        for j in range(N):
            Pl[j * K + k] /= mx
        logc += mult[k] * math.log(mx)
    return logc


@kernel(helper=True)
def mv_strides(mult, K):
    """Mixed-radix strides of the DP states: ``stride[k] = Π_{i<k} (m_i + 1)``, length K+1."""
    stride = np.empty(K + 1, dtype=np.int64)
    stride[0] = 1
    for k in range(K):
        stride[k + 1] = stride[k] * (mult[k] + 1)
    return stride


@kernel(helper=True)
def _mv_layer(W, Pl, order, lo, hi, stride, mult, row, K, forward):
    """One layer of the layered DP, renormalised to max 1; returns the max removed.

    Fills ``W[u]`` for the states ``order[lo:hi]``: forward, F[u] = Σ_k F[u - e_k]·P[row, k]
    over the used values; backward, B[u] = Σ_k P[row, k]·B[u + e_k] over the unused ones.
    A zero max (the layer has no weight) is returned as is, the layer left unscaled.
    ``forward`` is an int64 flag (1 or 0), not a literal bool: one specialization for both.
    """
    mx = 0.0
    for idx in range(lo, hi):
        u = order[idx]
        acc = 0.0
        for k in range(K):
            digit = (u // stride[k]) % (mult[k] + 1)
            if forward:
                if digit > 0:
                    acc += W[u - stride[k]] * Pl[row + k]
            elif digit < mult[k]:
                acc += Pl[row + k] * W[u + stride[k]]
        W[u] = acc
        if acc > mx:
            mx = acc
    if mx != 0.0:
        for idx in range(lo, hi):
            W[order[idx]] /= mx
    return mx


@kernel(helper=True)
def _mv_layers(mult, K, N, stride, T):
    """States ordered by layer (Σ digits): ``(order, start)``."""
    layer = np.empty(T, dtype=np.int64)
    cnt = np.zeros(N + 2, dtype=np.int64)
    for u in range(T):
        s = 0
        for k in range(K):
            s += (u // stride[k]) % (mult[k] + 1)
        layer[u] = s
        cnt[s + 1] += 1
    for L in range(N + 1):
        cnt[L + 1] += cnt[L]
    order = np.empty(T, dtype=np.int64)
    pos = cnt[:N + 1].copy()
    for u in range(T):
        L = layer[u]
        order[pos[L]] = u
        pos[L] += 1
    return order, cnt


@kernel(helper=True)
def _mv_dp_layered(Pl, N, K, mult, out, logc):
    """Exact multi-valued posteriors of one group by a layered DP over used multiplicities.

    (Every layer renormalised; used when the odometer-order DP of :func:`mv_dp_core`
    underflows. ``Pl`` is already balanced, ``logc`` the balancing log-factor.)

    ``Pl``: writable flat N*K row-major block (balanced in place); ``mult``: writable int64
    (K,); ``out``: writable flat, receives the posteriors *value-major* (``out[k*N + j]`` =
    p(t_j : value_k)). State u = vector of used multiplicities (mixed radix); F[u] = weight
    of assigning those values to the first Σu tuples, B[u] = weight of assigning the rest
    to the remaining tuples; p(t_j : k) ∝ Σ_{|u| = j} F[u] P[j, k] B[u + e_k]. All terms
    are non-negative (no cancellation); every layer is renormalised. O(Π(m_k+1) · K).
    Returns ``(status, log_Z)`` with Z = Σ_w p(w).
    """
    stride = mv_strides(mult, K)
    T = stride[K]
    order, start = _mv_layers(mult, K, N, stride, T)
    F = np.zeros(T, dtype=np.float64)
    Bw = np.zeros(T, dtype=np.float64)
    F[0] = 1.0
    lf = 0.0
    status = STATUS_OK
    for L in range(1, N + 1):
        mx = _mv_layer(F, Pl, order, start[L], start[L + 1], stride, mult, (L - 1) * K, K,
                       np.int64(1))
        if mx == 0.0:
            status = STATUS_UNDEFINED
            break
        lf += math.log(mx)
    if status == STATUS_OK:
        Bw[T - 1] = 1.0
        for L in range(N - 1, -1, -1):
            if _mv_layer(Bw, Pl, order, start[L], start[L + 1], stride, mult, L * K, K,
                         np.int64(0)) == 0.0:
                status = STATUS_UNDERFLOW
                break
    if status == STATUS_OK:
        num = np.empty(K, dtype=np.float64)
        for j in range(N):
            for k in range(K):
                num[k] = 0.0
            row = j * K
            for idx in range(start[j], start[j + 1]):
                u = order[idx]
                fu = F[u]
                if fu == 0.0:
                    continue
                for k in range(K):
                    if (u // stride[k]) % (mult[k] + 1) < mult[k]:
                        num[k] += fu * Pl[row + k] * Bw[u + stride[k]]
            tot = 0.0
            for k in range(K):
                tot += num[k]
            if not tot > 0.0:
                status = STATUS_UNDERFLOW
                break
            for k in range(K):
                out[k * N + j] = num[k] / tot
    if status != STATUS_OK:
        if status == STATUS_UNDEFINED and _mv_reachable(Pl, N, K, mult, stride, order, start):
            status = STATUS_UNDERFLOW
        for i in range(N * K):
            out[i] = np.nan
        return status, -np.inf
    return STATUS_OK, lf + logc


@kernel
def mv_dp_core(Pl, N, K, mult, out):
    """Exact multi-valued posteriors of one group by a DP over used multiplicities.

    ``Pl``: writable flat N*K row-major block (balanced in place); ``mult``: writable int64
    (K,); ``out``: writable flat, receives the posteriors *value-major* (``out[k*N + j]`` =
    p(t_j : value_k)). State u = vector of used multiplicities (mixed radix); F[u] = weight
    of assigning those values to the first Σu tuples, B[u] = weight of assigning the rest
    to the remaining tuples; p(t_j : k) ∝ Σ_{|u| = j} F[u] P[j, k] B[u + e_k]. All terms
    are non-negative (no cancellation). States are visited in index order with an odometer
    (no divisions); when the total weight is below 1e-250 the layered, per-layer
    renormalised DP is used instead, and a log-space DP when some probability is below
    1e-150. O(Π(m_k+1) · K). Returns ``(status, log_Z)`` with Z = Σ_w p(w).
    """
    logc = mv_balance(Pl, N, K, mult)
    if logc == -np.inf:
        for i in range(N * K):
            out[i] = np.nan
        return STATUS_UNDEFINED, -np.inf
    for i in range(N * K):
        if Pl[i] > 0.0 and Pl[i] < _MV_TINY:
            res = mv_dp_log_core(Pl, N, K, mult, out)
            if res[0] != STATUS_OK:
                return res
            return res[0], res[1] + logc
    stride = mv_strides(mult, K)
    T = stride[K]
    F = np.empty(T, dtype=np.float64)
    F[0] = 1.0
    d = np.zeros(K, dtype=np.int64)
    L = 0
    for u in range(1, T):
        k = 0
        while d[k] == mult[k]:          # odometer increment
            L -= d[k]
            d[k] = 0
            k += 1
        d[k] += 1
        L += 1
        row = (L - 1) * K
        acc = 0.0
        for q in range(K):
            if d[q] > 0:
                acc += F[u - stride[q]] * Pl[row + q]
        F[u] = acc
    Z = F[T - 1]
    if not Z >= 1e-250:
        return _mv_dp_layered(Pl, N, K, mult, out, logc)
    Bw = np.empty(T, dtype=np.float64)
    Bw[T - 1] = 1.0
    for q in range(K):
        d[q] = mult[q]
    L = N
    for u in range(T - 2, -1, -1):
        k = 0
        while d[k] == 0:                # odometer decrement
            d[k] = mult[k]
            L += mult[k]
            k += 1
        d[k] -= 1
        L -= 1
        row = L * K
        acc = 0.0
        for q in range(K):
            if d[q] < mult[q]:
                acc += Pl[row + q] * Bw[u + stride[q]]
        Bw[u] = acc
    num = np.zeros(N * K, dtype=np.float64)
    for q in range(K):
        d[q] = 0
    L = 0
    for u in range(T - 1):
        if u > 0:
            k = 0
            while d[k] == mult[k]:
                L -= d[k]
                d[k] = 0
                k += 1
            d[k] += 1
            L += 1
        fu = F[u]
        if fu == 0.0:
            continue
        row = L * K
        for q in range(K):
            if d[q] < mult[q]:
                num[row + q] += fu * Pl[row + q] * Bw[u + stride[q]]
    for j in range(N):
        tot = 0.0
        for q in range(K):
            tot += num[j * K + q]
        if not tot >= 1e-290:
            return _mv_dp_layered(Pl, N, K, mult, out, logc)
        for q in range(K):
            out[q * N + j] = num[j * K + q] / tot
    return STATUS_OK, math.log(Z) + logc


@kernel(helper=True)
def mv_dp_log_core(Pl, N, K, mult, out):
    """Log-space twin of :func:`mv_dp_core`; same contract.

    Used when some probability is so small (e.g. subnormal) that products of it lose
    their digits.
    """
    stride = mv_strides(mult, K)
    T = stride[K]
    order, start = _mv_layers(mult, K, N, stride, T)
    L_ = np.empty(N * K, dtype=np.float64)
    for i in range(N * K):
        L_[i] = _log0(Pl[i])
    F = np.full(T, -np.inf, dtype=np.float64)
    Bw = np.full(T, -np.inf, dtype=np.float64)
    F[0] = 0.0
    for L in range(1, N + 1):
        row = (L - 1) * K
        for idx in range(start[L], start[L + 1]):
            u = order[idx]
            acc = -np.inf
            for k in range(K):
                if (u // stride[k]) % (mult[k] + 1) > 0:
                    acc = _lae(acc, F[u - stride[k]] + L_[row + k])
            F[u] = acc
    if F[T - 1] == -np.inf:
        for i in range(N * K):
            out[i] = np.nan
        return STATUS_UNDEFINED, -np.inf
    Bw[T - 1] = 0.0
    for L in range(N - 1, -1, -1):
        row = L * K
        for idx in range(start[L], start[L + 1]):
            u = order[idx]
            acc = -np.inf
            for k in range(K):
                if (u // stride[k]) % (mult[k] + 1) < mult[k]:
                    acc = _lae(acc, L_[row + k] + Bw[u + stride[k]])
            Bw[u] = acc
    num = np.empty(K, dtype=np.float64)
    for j in range(N):
        for k in range(K):
            num[k] = -np.inf
        row = j * K
        for idx in range(start[j], start[j + 1]):
            u = order[idx]
            fu = F[u]
            if fu == -np.inf:
                continue
            for k in range(K):
                if (u // stride[k]) % (mult[k] + 1) < mult[k]:
                    num[k] = _lae(num[k], fu + L_[row + k] + Bw[u + stride[k]])
        tot = -np.inf
        for k in range(K):
            tot = _lae(tot, num[k])
        for k in range(K):
            out[k * N + j] = math.exp(num[k] - tot)
    return STATUS_OK, F[T - 1]


@kernel(helper=True)
def _mv_reachable(Pl, N, K, mult, stride, order, start):
    """Whether some world has all entries > 0 (boolean DP; tells zero from underflow)."""
    T = stride[K]
    R = np.zeros(T, dtype=np.bool_)
    R[0] = True
    for L in range(1, N + 1):
        row = (L - 1) * K
        for idx in range(start[L], start[L + 1]):
            u = order[idx]
            ok = False
            for k in range(K):
                if (u // stride[k]) % (mult[k] + 1) > 0:
                    if R[u - stride[k]] and Pl[row + k] > 0.0:
                        ok = True
                        break
            R[u] = ok
    return R[T - 1]


@kernel(helper=True)
def _mv_matchable(Pl, N, K, mult):
    """Test whether some world has positive weight.

    That is a perfect matching of tuples to value slots (value k repeated m_k times) over
    entries P[j, k] > 0, found with BFS augmenting paths in O(N^3).
    """
    slot_val = np.empty(N, dtype=np.int64)
    c = 0
    for k in range(K):
        for _ in range(mult[k]):
            slot_val[c] = k
            c += 1
    slot_row = np.full(N, -1, dtype=np.int64)
    row_slot = np.full(N, -1, dtype=np.int64)
    seen = np.zeros(N, dtype=np.bool_)
    par = np.empty(N, dtype=np.int64)
    q = np.empty(N, dtype=np.int64)
    for j in range(N):
        for c in range(N):
            seen[c] = False
        q[0] = j
        head = 0
        tail = 1
        found = -1
        while head < tail and found < 0:
            r = q[head]
            head += 1
            for c in range(N):
                if not seen[c] and Pl[r * K + slot_val[c]] > 0.0:
                    seen[c] = True
                    par[c] = r
                    if slot_row[c] < 0:
                        found = c
                        break
                    q[tail] = slot_row[c]
                    tail += 1
        if found < 0:
            return False
        c = found
        while True:
            r = par[c]
            prev = row_slot[r]
            slot_row[c] = r
            row_slot[r] = c
            if r == j:
                break
            c = prev
    return True


@kernel
def ryser_core(Pl, N, K, mult, out):
    """Multi-valued posteriors by Ryser's formula over column multiplicities.

    perm(M) = (-1)^N Σ_s (-1)^{|s|} Π_k C(m_k, s_k) Π_j R_j(s), R_j(s) = Σ_k s_k P[j, k],
    s_k = 0..m_k visited in reflected mixed-radix Gray-code order (one s_k changes by ±1 per
    step, R updated in O(N), recomputed exactly every 1024 steps); the gradient
    ∂perm/∂P[j, k] is accumulated alongside, and p(t_j : k) = P[j, k] ∂perm/∂P[j, k] /
    perm. Z = perm / Π_k m_k!. Same layout as :func:`mv_dp_core`. Returns
    ``(status, log_Z, cancellation)`` where cancellation = Σ|terms| / |perm| (relative
    error ≈ N · 1e-16 · cancellation: inclusion–exclusion loses digits).
    """
    logc = mv_balance(Pl, N, K, mult)
    if logc == -np.inf or not _mv_matchable(Pl, N, K, mult):
        for i in range(N * K):
            out[i] = np.nan
        return STATUS_UNDEFINED, -np.inf, np.inf
    for i in range(N * K):
        if Pl[i] > 0.0 and Pl[i] < _MV_TINY:      # products would lose their digits
            for q in range(N * K):
                out[q] = np.nan
            return STATUS_UNDERFLOW, -np.inf, np.inf
    # binomial coefficients per column
    boff = np.empty(K + 1, dtype=np.int64)
    boff[0] = 0
    for k in range(K):
        boff[k + 1] = boff[k] + mult[k] + 1
    binom = np.empty(boff[K], dtype=np.float64)
    logfact = 0.0
    for k in range(K):
        m = mult[k]
        c = 1.0
        for s in range(m + 1):
            binom[boff[k] + s] = c
            c = c * (m - s) / (s + 1)
        logfact += math.lgamma(m + 1.0)
    s_ = np.zeros(K, dtype=np.int64)
    d_ = np.ones(K, dtype=np.int64)
    R = np.zeros(N, dtype=np.float64)
    pre = np.empty(N + 1, dtype=np.float64)
    suf = np.empty(N + 1, dtype=np.float64)
    G = np.zeros(N * K, dtype=np.float64)
    total = 0.0
    absum = 0.0
    parity = 0
    steps = 0
    while True:
        k = 0
        while k < K:
            if d_[k] == 1:
                if s_[k] < mult[k]:
                    break
            else:
                if s_[k] > 0:
                    break
            d_[k] = -d_[k]
            k += 1
        if k == K:
            break
        s_[k] += d_[k]
        parity ^= 1
        steps += 1
        if steps % 1024 == 0:
            for j in range(N):
                acc = 0.0
                for q in range(K):
                    acc += s_[q] * Pl[j * K + q]
                R[j] = acc
        else:
            dk = float(d_[k])
            for j in range(N):
                R[j] += dk * Pl[j * K + k]
        c = 1.0
        for q in range(K):
            c *= binom[boff[q] + s_[q]]
        term = -c if parity == 1 else c
        pre[0] = 1.0
        for j in range(N):
            pre[j + 1] = pre[j] * R[j]
        suf[N] = 1.0
        for j in range(N - 1, -1, -1):
            suf[j] = suf[j + 1] * R[j]
        total += term * pre[N]
        absum += abs(term * pre[N])
        for j in range(N):
            qv = term * pre[j] * suf[j + 1]
            if qv != 0.0:
                for q in range(K):
                    if s_[q] > 0:
                        G[j * K + q] += qv * s_[q]
    if N % 2 == 1:
        total = -total
        for i in range(N * K):
            G[i] = -G[i]
    if not total > 0.0 or absum > _RYSER_MAX_CANCEL * total:
        for i in range(N * K):
            out[i] = np.nan
        return STATUS_UNDERFLOW, -np.inf, np.inf
    for j in range(N):
        for k in range(K):
            v = Pl[j * K + k] * G[j * K + k] / total
            if v < 0.0:
                v = 0.0
            out[k * N + j] = v
    return STATUS_OK, math.log(total) - logfact + logc, absum / total


@kernel(inline="always")
def _mv_group(P_flat, poff, N, K, mult_flat, moff, method, out):
    """Copy one group into local buffers and run the chosen method (value-major out).

    Inlined into its one caller :func:`mv_posteriors_range`: as a kernel of its own it
    linked the three methods' code once more (0.9 of the warm-up's compile CPU-s), and it
    runs once per group, not in a hot loop.
    """
    Pl = np.empty(N * K, dtype=np.float64)
    for i in range(N * K):
        Pl[i] = P_flat[poff + i]
    ml = np.empty(K, dtype=np.int64)
    for k in range(K):
        ml[k] = mult_flat[moff + k]
    ol = np.empty(N * K, dtype=np.float64)
    cancel = 1.0
    if method == METHOD_RYSER:
        res = ryser_core(Pl, np.int64(N), np.int64(K), ml, ol)
        st = res[0]
        lz = res[1]
        cancel = res[2]
    else:
        res2 = mv_dp_core(Pl, np.int64(N), np.int64(K), ml, ol)
        st = res2[0]
        lz = res2[1]
    for i in range(N * K):
        out[poff + i] = ol[i]
    return st, lz, cancel


@kernel
def mv_posteriors_range(P_flat, poff, mult_flat, moff, method, g0, g1, post, status, logz,
                        cancel):
    """Compute groups ``[g0, g1)`` of :func:`mv_posteriors_csr` into its outputs."""
    for g in range(g0, g1):
        K = moff[g + 1] - moff[g]
        N = 0
        for k in range(moff[g], moff[g + 1]):
            N += mult_flat[k]
        res = _mv_group(P_flat, poff[g], np.int64(N), np.int64(K), mult_flat, moff[g],
                        np.int64(method), post)
        status[g] = res[0]
        logz[g] = res[1]
        cancel[g] = res[2]


def _mv_posteriors_csr(P_flat, poff, mult_flat, moff, method):
    """Multi-valued posteriors of many groups (chunks of groups on threads).

    Group g: ``K = moff[g+1] - moff[g]`` distinct values with multiplicities
    ``mult_flat[moff[g]:moff[g+1]]`` (N = Σ), its N x K block of P row-major at
    ``P_flat[poff[g]:poff[g+1]]``. Returns ``(post, status, log_Z, cancellation)`` with
    ``post`` in the same positions, each block value-major (K x N). Chunks of groups run
    :func:`mv_posteriors_range` (serial, ``nogil``) on :func:`fastpriv._threads.run_chunks`.
    """
    G = moff.shape[0] - 1
    post = np.empty(P_flat.shape[0], dtype=np.float64)
    status = np.zeros(G, dtype=np.int8)
    logz = np.empty(G, dtype=np.float64)
    cancel = np.ones(G, dtype=np.float64)
    n_chunks = min(G, 4 * current_threads())
    run_chunks(lambda c: mv_posteriors_range(P_flat, poff, mult_flat, moff, method,
                                             *chunk_bounds(G, n_chunks, c), post, status,
                                             logz, cancel), n_chunks)
    return post, status, logz, cancel


mv_posteriors_csr = Threaded(_mv_posteriors_csr, mv_posteriors_range)


def _mv_posteriors_one(P_flat, mult, method):
    """One group, on the calling thread: ``(post, status, log_Z, cancel)``.

    ``P_flat`` is the N x K block row-major, ``mult`` the K multiplicities; ``post`` is
    value-major (K x N). Runs :func:`mv_posteriors_range` on a batch of one group (the
    compiled code of the batched path; no kernel of its own).
    """
    K = int(mult.shape[0])
    N = int(np.sum(mult))
    post = np.empty(N * K, dtype=np.float64)
    status = np.zeros(1, dtype=np.int8)
    logz = np.empty(1, dtype=np.float64)
    cancel = np.ones(1, dtype=np.float64)
    mv_posteriors_range(P_flat, _read_only(np.array([0, N * K], dtype=np.int64)), mult,
                        _read_only(np.array([0, K], dtype=np.int64)), int(method), 0, 1, post,
                        status, logz, cancel)
    return post, status[0], logz[0], cancel[0]


mv_posteriors_one = Threaded(_mv_posteriors_one, mv_posteriors_range)


# ====================================================================== audit helpers
@kernel
def gather_segments(goff, order, grp, seg_count):
    """Segment layout of a chunk of groups.

    ``grp`` lists the chunk's groups, ``seg_count[i]`` how many segments (sensitive
    values present) group ``grp[i]`` has; each segment covers the group's rows in
    ``order[goff[g]:goff[g+1]]`` order. Returns ``(entry_rows, seg_offsets)``.
    """
    G = grp.shape[0]
    nseg = 0
    total = 0
    for i in range(G):
        g = grp[i]
        nseg += seg_count[i]
        total += seg_count[i] * (goff[g + 1] - goff[g])
    rows = np.empty(total, dtype=np.int64)
    offs = np.empty(nseg + 1, dtype=np.int64)
    offs[0] = 0
    s = 0
    pos = 0
    for i in range(G):
        g = grp[i]
        a = goff[g]
        N = goff[g + 1] - a
        for _ in range(seg_count[i]):
            for t in range(N):
                rows[pos + t] = order[a + t]
            pos += N
            s += 1
            offs[s] = pos
    return rows, offs


@kernel
def gather_f(sig, probs, entry_rows, seg_offsets, seg_value):
    """F of every entry: ``probs[sig[row], value of its segment]`` (float64)."""
    S = seg_value.shape[0]
    f = np.empty(entry_rows.shape[0], dtype=np.float64)
    for s in range(S):
        x = seg_value[s]
        for e in range(seg_offsets[s], seg_offsets[s + 1]):
            f[e] = probs[sig[entry_rows[e]], x]
    return f


@kernel
def reduce_segments(p, f, seg_offsets, grp_seg, grp_size):
    """Per-segment and per-row reductions of a chunk in the group-block layout.

    Group i of the chunk owns segments ``grp_seg[i]:grp_seg[i+1]``, each of
    ``grp_size[i]`` entries over the same rows in the same order; the chunk's rows are the
    groups' rows concatenated. Returns ``(seg_max, seg_arg, seg_fmax, seg_fmin, row_max,
    row_seg)``: the maximum posterior of a segment (NaN if undefined) and the entry where
    it occurs, the extreme f of the segment, and per chunk row the maximum over its
    segments with the segment realising it (-1 if none).
    """
    S = seg_offsets.shape[0] - 1
    G = grp_size.shape[0]
    seg_max = np.empty(S, dtype=np.float64)
    seg_arg = np.empty(S, dtype=np.int64)
    seg_fmax = np.empty(S, dtype=np.float64)
    seg_fmin = np.empty(S, dtype=np.float64)
    nrows = 0
    for i in range(G):
        nrows += grp_size[i]
    row_max = np.full(nrows, -1.0, dtype=np.float64)
    row_seg = np.full(nrows, -1, dtype=np.int64)
    rpos = 0
    for i in range(G):
        N = grp_size[i]
        for s in range(grp_seg[i], grp_seg[i + 1]):
            a = seg_offsets[s]
            best = -1.0
            arg = a
            fmx = -1.0
            fmn = 2.0
            undefined = False
            for t in range(N):
                v = p[a + t]
                fv = f[a + t]
                if fv > fmx:
                    fmx = fv
                if fv < fmn:
                    fmn = fv
                if v != v:
                    undefined = True
                    continue
                if v > best:
                    best = v
                    arg = a + t
                if v > row_max[rpos + t]:
                    row_max[rpos + t] = v
                    row_seg[rpos + t] = s
            seg_max[s] = np.nan if undefined else best
            seg_arg[s] = arg
            seg_fmax[s] = fmx
            seg_fmin[s] = fmn
        rpos += N
    return seg_max, seg_arg, seg_fmax, seg_fmin, row_max, row_seg


@kernel
def absent_certain(sig, probs, row_grp, indptr, codes, xs):
    """Rows whose knowledge says p(sig : x) = 1 for a sensitive x absent from their group.

    Their posterior p(t : x) is undefined (E_0 = 0: the knowledge contradicts the
    release). Returns ``(rows, values)``.
    """
    R = sig.shape[0]
    X = xs.shape[0]
    hit = np.zeros(R, dtype=np.int64)
    cnt = 0
    for i in range(R):
        sg = sig[i]
        for t in range(X):
            if probs[sg, xs[t]] >= 1.0:
                g = row_grp[i]
                found = False
                for e in range(indptr[g], indptr[g + 1]):
                    if codes[e] == xs[t]:
                        found = True
                        break
                if not found:
                    hit[i] += 1
                    cnt += 1
    rows = np.empty(cnt, dtype=np.int64)
    vals = np.empty(cnt, dtype=np.int64)
    if cnt == 0:
        return rows, vals
    c = 0
    for i in range(R):
        if hit[i] == 0:
            continue
        sg = sig[i]
        g = row_grp[i]
        for t in range(X):
            if probs[sg, xs[t]] >= 1.0:
                found = False
                for e in range(indptr[g], indptr[g + 1]):
                    if codes[e] == xs[t]:
                        found = True
                        break
                if not found:
                    rows[c] = i
                    vals[c] = xs[t]
                    c += 1
    return rows, vals


@kernel
def gather_blocks(goff, order, grp, indptr, codes, counts, sig, probs):
    """Multi-valued input of a chunk of groups for :func:`mv_posteriors_csr`.

    Group ``grp[i]``: its rows ``order[goff[g]:goff[g+1]]`` (N) and its distinct values
    ``codes[indptr[g]:indptr[g+1]]`` (K, multiplicities ``counts``); the block is N x K
    row-major with ``P[j, k] = probs[sig[row_j], code_k]``. Returns
    ``(P_flat, poff, mult_flat, moff)``.
    """
    G = grp.shape[0]
    poff = np.empty(G + 1, dtype=np.int64)
    moff = np.empty(G + 1, dtype=np.int64)
    poff[0] = 0
    moff[0] = 0
    for i in range(G):
        g = grp[i]
        N = goff[g + 1] - goff[g]
        K = indptr[g + 1] - indptr[g]
        poff[i + 1] = poff[i] + N * K
        moff[i + 1] = moff[i] + K
    P = np.empty(poff[G], dtype=np.float64)
    mult = np.empty(moff[G], dtype=np.int64)
    for i in range(G):
        g = grp[i]
        a = goff[g]
        N = goff[g + 1] - a
        e0 = indptr[g]
        K = indptr[g + 1] - e0
        for k in range(K):
            mult[moff[i] + k] = counts[e0 + k]
        for j in range(N):
            s = sig[order[a + j]]
            base = poff[i] + j * K
            for k in range(K):
                P[base + k] = probs[s, codes[e0 + k]]
    return P, poff, mult, moff
