"""Kernels behind :mod:`fastpriv.risk`: re-identification risk from class sizes.

Two row-level Numba kernels (the only passes over the data):

* :func:`subset_class_sizes` — for one subset of the QI columns, the size of each row's
  equivalence class (one counting pass: mixed-radix keys, densified by hashing when the
  radix product would overflow);
* :func:`bf_individual_risk` — Benedetti–Franconi individual risk per class.

Everything else works on the histogram of class sizes (how many classes have size 1, 2, …):
the Pitman fit (:func:`pitman_fit`, damped Newton with the digamma and trigamma it needs) is
compiled, the Zayatz and SNB population-uniqueness estimators are plain NumPy; no SciPy.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel

_KEY_LIMIT = 1 << 62
_DENSE_LIMIT = 1 << 26  # counting-array path when the radix product is at most this (and ≤ 4n)


@kernel(helper=True)
def _densify(keys, n_slots_bits):
    """Map int64 ``keys`` to dense ids in first-seen order; returns ``(ids, n_distinct)``."""
    n = keys.shape[0]
    size = np.int64(1) << n_slots_bits
    mask = size - 1
    tkeys = np.empty(size, dtype=np.int64)
    tvals = np.full(size, -1, dtype=np.int64)
    ids = np.empty(n, dtype=np.int64)
    nxt = 0
    for i in range(n):
        k = keys[i]
        h = (k * np.int64(-7046029254386353131)) >> np.int64(64 - n_slots_bits)
        s = h & mask
        while True:
            v = tvals[s]
            if v < 0:
                tkeys[s] = k
                tvals[s] = nxt
                ids[i] = nxt
                nxt += 1
                break
            if tkeys[s] == k:
                ids[i] = v
                break
            s = (s + 1) & mask
    return ids, nxt


@kernel(helper=True)
def subset_ids(codes, cols, cards, n_slots_bits):
    """Dense class id of each row on the QI subset ``cols``; returns ``(ids, n_classes)``.

    Keys are mixed-radix numbers Σ code_c · Π card; when the radix product would pass 2^62
    the partial key is densified first (ids < n_rows), so any number of columns works.
    """
    n = codes.shape[1]
    keys = np.zeros(n, dtype=np.int64)
    prod = np.int64(1)
    for j in range(cols.shape[0]):
        c = cols[j]
        card = cards[c]
        if prod > _KEY_LIMIT // max(card, 1):
            ids, nd = _densify(keys, n_slots_bits)
            keys = ids
            prod = max(nd, 1)
        for i in range(n):
            keys[i] = keys[i] * card + codes[c, i]
        prod *= card
    return _densify(keys, n_slots_bits)


@kernel
def subset_class_sizes(codes, cols, cards, weights, n_slots_bits):
    """Size of each row's equivalence class on the QI subset ``cols``.

    Parameters
    ----------
    codes : int32 array (n_columns, n_rows)
        Dense codes of every QI column (row ``c`` = column ``c``).
    cols : int64 array
        The subset (column indices).
    cards : int64 array (n_columns,)
        Number of distinct codes per column.
    weights : int64 array (n_rows,)
        Multiplicity of each row (rows may be distinct full QI tuples with counts).
    n_slots_bits : int
        log2 of the hash table size (at least 2 × n_rows slots).

    When the radix product Π card is small (≤ max(2^22, 4·n_rows) and ≤ 2^26) the key
    indexes a counting array directly; otherwise keys are densified by hashing.

    Returns
    -------
    sizes : int64 array (n_rows,)
        Σ weights over the rows sharing the row's values on ``cols``.
    n_classes : int
        Number of distinct value combinations on ``cols``.

    """
    n = codes.shape[1]
    prod = np.int64(1)
    for j in range(cols.shape[0]):
        card = cards[cols[j]]
        if prod > _DENSE_LIMIT // max(card, 1):
            prod = _DENSE_LIMIT + 1
            break
        prod *= card
    if prod <= max(_DENSE_LIMIT >> 4, 4 * n) and prod <= _DENSE_LIMIT:
        # dense path: the mixed-radix key indexes a counting array directly (no hashing)
        key = np.zeros(n, dtype=np.int64)
        for j in range(cols.shape[0]):
            c = cols[j]
            card = cards[c]
            for i in range(n):
                key[i] = key[i] * card + codes[c, i]
        tot = np.zeros(prod, dtype=np.int64)
        for i in range(n):
            tot[key[i]] += weights[i]
        nd = 0
        for v in range(prod):
            if tot[v] > 0:
                nd += 1
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            out[i] = tot[key[i]]
        return out, nd
    ids, nd = subset_ids(codes, cols, cards, n_slots_bits)
    tot = np.zeros(nd, dtype=np.int64)
    for i in range(n):
        tot[ids[i]] += weights[i]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = tot[ids[i]]
    return out, nd


@kernel
def bf_individual_risk(f, wsum):
    """Benedetti–Franconi individual risk r = E[1/F | f] per class.

    Benedetti & Franconi (1998); Franconi & Polettini (2004), eq. (5): given the sample
    frequency f ≥ 1 and the estimated population frequency F̂ = Σ weights, with
    p = f / F̂, the posterior of F − f is negative binomial(f, p) and

        r = Σ_{h ≥ f} (1/h) C(h−1, f−1) p^f q^{h−f} = p ∫₀¹ u^{f−1} / (p + q u) du,  q = 1 − p.

    The integral J_f = ∫₀¹ u^{f−1}/(p + q u) du obeys q J_{f+1} + p J_f = 1/f with
    J_1 = −log(p)/q (the closed forms of the μ-Argus manual for f = 1, 2, 3 follow). For
    q ≥ ½ the forward recurrence is stable (errors shrink by p/q per step); for q < ½ the
    series J_f = Σ_j q^j (f−1)! j! / (f+j)! converges at least as fast as 2^{−j}.
    ``p = 1`` (no sampling) gives r = 1/f. No approximation for large f is used.
    """
    m = f.shape[0]
    out = np.empty(m, dtype=np.float64)
    for c in range(m):
        fk = f[c]
        p = fk / wsum[c]
        q = 1.0 - p
        if q <= 0.0:
            out[c] = 1.0 / fk
            continue
        if q >= 0.5:
            j = -math.log(p) / q
            for h in range(1, fk):
                j = (1.0 / h - p * j) / q
            out[c] = p * j
        else:
            # term_j = q^j (f-1)! j! / (f+j)!  ; term_0 = 1/f
            term = 1.0 / fk
            s = term
            jj = 0
            while term > 1e-18 * s:
                jj += 1
                term *= q * jj / (fk + jj)
                s += term
            out[c] = p * s
    return out


# ----------------------------------------------------------------------------------------
# special functions (scalar, compiled; no SciPy)

@kernel(helper=True)
def _digamma(x):
    """ψ(x) for x > 0: recurrence up to x ≥ 10, then the asymptotic series (|err| < 1e-14)."""
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return acc + math.log(x) - 0.5 * inv - series


@kernel(helper=True)
def _trigamma(x):
    """ψ'(x) for x > 0: recurrence up to x ≥ 10, then the asymptotic series."""
    acc = 0.0
    while x < 10.0:
        acc += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv + 0.5 * inv2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))
    return acc + series


# ----------------------------------------------------------------------------------------
# population-uniqueness models on the histogram (sizes[i] classes have count[i] each)

@kernel(helper=True)
def _pitman_loglik(theta, alpha, sizes, count, n):
    """Log-likelihood of the Pitman (Ewens–Pitman two-parameter) partition of the sample.

    Pitman (1995); Hoshino (2001), eq. (3.2):
    log L = Σ_{i=1}^{u−1} log(θ + iα) − Σ_{i=1}^{n−1} log(θ + i) + Σ_j Σ_{i=1}^{f_j−1} log(i − α),
    written with log Γ (u classes, n records).
    """
    u = 0.0
    for j in range(count.shape[0]):
        u += count[j]
    tl = theta / alpha
    val = (u - 1) * math.log(alpha) + math.lgamma(tl + u) - math.lgamma(tl + 1)
    val -= math.lgamma(theta + n) - math.lgamma(theta + 1)
    g1 = math.lgamma(1 - alpha)
    s = 0.0
    for j in range(sizes.shape[0]):
        s += count[j] * (math.lgamma(sizes[j] - alpha) - g1)
    return val + s


@kernel(helper=True)
def _pitman_grad_hess(theta, alpha, sizes, count, n):
    """Score (g0, g1) and Hessian (h00, h01, h11) of :func:`_pitman_loglik` in (θ, α)."""
    u = 0.0
    for j in range(count.shape[0]):
        u += count[j]
    tl = theta / alpha
    s0 = (_digamma(tl + u) - _digamma(tl + 1)) / alpha            # Σ 1/(θ+iα)
    s1 = ((u - 1) - theta * s0) / alpha                           # Σ i/(θ+iα)
    s00 = (_trigamma(tl + 1) - _trigamma(tl + u)) / alpha ** 2    # Σ 1/(θ+iα)²
    # Σ i/(θ+iα)² = (s0 − θ s00)/α ;  Σ i²/(θ+iα)² = (s1 − θ Σ i/(θ+iα)²)/α
    s10 = (s0 - theta * s00) / alpha
    s11 = (s1 - theta * s10) / alpha
    dn = _digamma(theta + n) - _digamma(theta + 1)
    tn = _trigamma(theta + 1) - _trigamma(theta + n)
    d1, t1 = _digamma(1 - alpha), _trigamma(1 - alpha)
    dc = 0.0
    tc = 0.0
    for j in range(sizes.shape[0]):
        if sizes[j] > 1:
            dc += count[j] * (_digamma(sizes[j] - alpha) - d1)
            tc += count[j] * (t1 - _trigamma(sizes[j] - alpha))
    return s0 - dn, s1 - dc, -s00 + tn, -s10, -s11 - tc


@kernel(helper=True)
def _pitman_newton(t, a, sizes, count, n, max_iter):
    """Damped Newton ascent of the Pitman likelihood from (t, a): (ok, θ, α, log L)."""
    ll = _pitman_loglik(t, a, sizes, count, n)
    for _ in range(max_iter):
        g0, g1, h00, h01, h11 = _pitman_grad_hess(t, a, sizes, count, n)
        det = h00 * h11 - h01 * h01
        if det == 0.0:
            return False, t, a, ll
        st0 = (h01 * g1 - h11 * g0) / det          # solves H·step = −g
        st1 = (h01 * g0 - h00 * g1) / det
        if not (math.isfinite(st0) and math.isfinite(st1)) or g0 * st0 + g1 * st1 <= 0:
            m = max(max(abs(g0), abs(g1)), 1.0)    # not an ascent direction: gradient
            st0, st1 = g0 / m * 1e-2, g1 / m * 1e-2
        lam = 1.0
        nt, na, nll = t, a, ll
        accepted = False
        while lam > 1e-12:
            nt, na = t + lam * st0, a + lam * st1
            if 0 < na < 1 and nt > -na:
                nll = _pitman_loglik(nt, na, sizes, count, n)
                if nll >= ll - 1e-12 * abs(ll):
                    accepted = True
                    break
            lam *= 0.5
        if not accepted:
            break
        done = abs(nt - t) <= 1e-10 * (1 + abs(t)) and abs(na - a) <= 1e-12
        t, a, ll = nt, na, nll
        if done:
            break
    g0, g1, _, _, _ = _pitman_grad_hess(t, a, sizes, count, n)
    tol = 1e-5 * (1 + abs(ll))
    ok = abs(g0) * (1.0 + abs(t)) < tol and abs(g1) < tol
    return ok, t, a, ll


@kernel
def pitman_fit(sizes, count, n, max_iter):
    """Maximum-likelihood (θ, α) of Pitman's model by damped Newton on the score equations.

    Hoshino (2001), section 3. Newton runs from four starting points — ARX's moment guess
    (ModelPitman), (1, ½), (u, 0.1), (0.1, 0.9) — and the converged fit of highest
    likelihood is kept. Constraint 0 < α < 1, θ > −α. ``sizes``, ``count`` float64, ``n``
    and ``max_iter`` int64. Returns ``(theta, alpha, converged)``.
    """
    c1 = 0.0
    c2 = 0.0
    u = 0.0
    for j in range(sizes.shape[0]):
        u += count[j]
        if sizes[j] == 1:
            c1 += count[j]
        elif sizes[j] == 2:
            c2 += count[j]
    if c2 == 0:
        c2 = 1.0
    nf = float(n)
    c = c1 * (c1 - 1) / c2
    den = 2 * c1 * u + c1 * c - nf * c
    t = (nf * u * c - c1 * (nf - 1) * (2 * u + c)) / den if den != 0 else math.nan
    a = (t * (c1 - nf) + (nf - 1) * c1) / (nf * u) if math.isfinite(t) else math.nan
    best_t, best_a, best_ll, found = math.nan, math.nan, -math.inf, False
    for s in range(4):
        if s == 0:
            t0, a0 = t, a
        elif s == 1:
            t0, a0 = 1.0, 0.5
        elif s == 2:
            t0, a0 = u, 0.1
        else:
            t0, a0 = 0.1, 0.9
        if not (math.isfinite(t0) and math.isfinite(a0) and 0 < a0 < 1 and t0 > -a0):
            continue
        ok, rt, ra, rll = _pitman_newton(t0, a0, sizes, count, n, max_iter)
        if ok and (not found or rll > best_ll):
            best_t, best_a, best_ll, found = rt, ra, rll, True
    return best_t, best_a, found


def pitman_uniques(theta: float, alpha: float, big_n: float) -> float:
    """Estimate population uniques under Pitman's model: Γ(θ+1)/Γ(θ+α) · N^α.

    Hoshino (2001), eq. (3.5).

    NaN when the parameters are invalid or the estimate lies outside [0, N].
    """
    if not (np.isfinite(theta) and np.isfinite(alpha)) or alpha <= 0:
        return float("nan")
    val = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(big_n))
    return val if 0 <= val <= big_n else float("nan")


def log_hyper1_ratio(big_n: float, k: np.ndarray, n: float) -> np.ndarray:
    """Log of H(1; N, k, n) / H(1; N, 1, n), the hypergeometric P(X = 1) ratios, exactly.

    H(1; N, k, n) = k · C(N−k, n−1) / C(N, n), so the ratio is
    k · C(N−k, n−1) / C(N−1, n−1) = k · Π_{j=1}^{k−1} (1 − (n−1)/(N−j)), summed here as
    log k + Σ log1p(−(n−1)/(N−j)): no difference of log Γ values near log Γ(N) (which loses
    ~1e-7 relative at N ≥ 10⁸). −inf where impossible (N − k < n − 1).
    """
    k = np.asarray(k, dtype=np.int64)
    out = np.full(k.shape, -np.inf)
    if k.size == 0:
        return out
    m = int(k.max())
    j = np.arange(1, m, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(big_n - j >= n, np.log1p(-(n - 1) / (big_n - j)), -np.inf)
    cum = np.concatenate([[0.0], np.cumsum(term)])
    ok = (big_n - k) >= (n - 1)
    out[ok] = np.log(k[ok]) + cum[k[ok] - 1]
    return out


def zayatz_uniques(sizes: np.ndarray, count: np.ndarray, n: int, big_n: float) -> float:
    """Estimate population uniques by Zayatz (1991), as in ARX's ModelZayatz.

    The population class-size distribution is estimated by the sample's (P(F = i) = c_i/u);
    the probability that a sample unique is a population unique is
    P(F=1 | f=1) = c_1 H(1; N, 1, n) / Σ_i c_i H(1; N, i, n), H the hypergeometric pmf, and
    the estimate is c_1 · P(F=1 | f=1) / π with π = n/N. The ratios H(1; N, i, n) /
    H(1; N, 1, n) come from :func:`log_hyper1_ratio` (exact at any N).
    """
    c1 = float(count[sizes == 1].sum())
    if c1 == 0:
        return 0.0
    lr = log_hyper1_ratio(big_n, np.asarray(sizes, dtype=np.int64), n)
    top = lr.max()
    w = count * np.exp(lr - top)
    cond = c1 * math.exp(-top) / float(w.sum())
    return c1 * cond / (n / big_n)


def shlosser_k(sizes: np.ndarray, count: np.ndarray, pi: float) -> float:
    """Estimate the number of non-empty population classes K by Shlosser's modified estimator.

    Haas, Naughton, Seshadri & Stokes (1995), D̂_Sh2 (used by Chen & Keller-McNulty 1998):
    K = u + c_1 · [Σ i π²(1−π²)^{i−1} c_i / Σ (1−π)^i((1+π)^i − 1) c_i]
        · [Σ (1−π)^i c_i / Σ i π (1−π)^{i−1} c_i]².
    ARX's ModelSNB evaluates the second denominator as Σ ((1−π)^i (1+π)^i c_i − 1) (operator
    precedence); this follows the paper.
    """
    i = sizes.astype(np.float64)
    c = count.astype(np.float64)
    u = float(c.sum())
    c1 = float(c[sizes == 1].sum())
    q = 1.0 - pi
    num1 = np.sum(i * pi * pi * (1 - pi * pi) ** (i - 1) * c)
    # (1−π)^i ((1+π)^i − 1) = (1−π²)^i − (1−π)^i: no (1+π)^i overflow for large classes
    den1 = np.sum(((1 - pi * pi) ** i - q ** i) * c)
    num2 = np.sum(q ** i * c)
    den2 = np.sum(i * pi * q ** (i - 1) * c)
    if den1 <= 0 or den2 <= 0:
        return u
    return float(u + c1 * (num1 / den1) * (num2 / den2) ** 2)


def snb_expected(a: float, b: float, k: float, pi: float) -> tuple[float, float]:
    """E[c_1], E[c_2] under the shifted negative binomial model (Chen & Keller-McNulty 1998).

    Population class sizes F = 1 + X, X ~ NegBin(α, β) (P(X = x) = C(x+α−1, x) β^α (1−β)^x),
    sample sizes f | F ~ Binomial(F, π). With D = (1−π)(1−β):
    P(f=1) = π (β/(1−D))^α (1 + αD/(1−D)),
    P(f=2) = π² α (1−β) β^α (2 − (1−α)D) / (2 (1−D)^{α+2}).
    (ARX's ModelSNB multiplies by (1−D)^{α+2} in the second; this follows the derivation.)
    """
    a, b, pi = np.float64(a), np.float64(b), np.float64(pi)
    d = (1 - pi) * (1 - b)
    p1 = pi * (b / (1 - d)) ** a * (1 + a * d / (1 - d))
    p2 = pi * pi * a * (1 - b) * b ** a * (2 - (1 - a) * d) / (2 * (1 - d) ** (a + 2))
    return float(k * p1), float(k * p2)


def snb_fit(c1: float, c2: float, k: float, pi: float) -> tuple[float, float, bool]:
    """Solve E[c_1] = c_1, E[c_2] = c_2 for (α, β) (Chen & Keller-McNulty 1998, sec. 3).

    Newton's method in (log α, logit β) with a finite-difference Jacobian and step halving on
    the residual norm, from several starting points. Returns ``(alpha, beta, converged)``.
    """
    if c1 <= 0 or c2 <= 0 or k <= 0:
        return float("nan"), float("nan"), False
    target = np.array([c1, c2])

    def resid(z):
        a, b = float(np.exp(z[0])), float(1 / (1 + np.exp(-z[1])))
        e1, e2 = snb_expected(a, b, k, pi)
        return np.array([e1, e2]) / target - 1.0

    best = None
    for la in (0.0, -2.0, 2.0, -5.0):
        for lb in (0.0, -3.0, 3.0, -8.0):
            z = np.array([la, lb])
            with np.errstate(all="ignore"):
                r = resid(z)
                for _ in range(200):
                    if not np.all(np.isfinite(r)):
                        break
                    jac = np.empty((2, 2))
                    for j in range(2):
                        dz = np.zeros(2)
                        dz[j] = 1e-7 * max(1.0, abs(z[j]))
                        jac[:, j] = (resid(z + dz) - r) / dz[j]
                    try:
                        step = np.linalg.solve(jac, -r)
                    except np.linalg.LinAlgError:
                        break
                    lam, nrm = 1.0, float(r @ r)
                    while lam > 1e-10:
                        nz = z + lam * step
                        nr = resid(nz)
                        if np.all(np.isfinite(nr)) and float(nr @ nr) < nrm:
                            break
                        lam *= 0.5
                    else:
                        break
                    z, r = nz, nr
                    if float(r @ r) < 1e-26:
                        break
            if np.all(np.isfinite(r)) and float(np.max(np.abs(r))) < 1e-9:
                a, b = float(np.exp(z[0])), float(1 / (1 + np.exp(-z[1])))
                if best is None or float(r @ r) < best[2]:
                    best = (a, b, float(r @ r))
        if best is not None:
            break
    if best is None:
        return float("nan"), float("nan"), False
    return best[0], best[1], True
