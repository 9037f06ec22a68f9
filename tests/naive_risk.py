"""Slow, obviously-correct oracles for fastpriv.risk (plain Python + SciPy, no fastpriv code).

* Risk measures by direct enumeration of records (each record's class found by scanning).
* Benedetti–Franconi risk by summing the negative-binomial series E[1/F | f] term by term.
* Pitman: the partition log-likelihood written as explicit sums of logs, maximized by a
  generic optimizer (scipy.optimize.minimize, Nelder–Mead from several starts).
* Zayatz: hypergeometric probabilities with exact integers (math.comb, Fraction).
* SNB: E[c1], E[c2] by summing the population size distribution term by term (negative
  binomial pmf times binomial sampling), solved with scipy.optimize.least_squares.
* Uniques and minimal sample uniques by checking every subset and every proper subset.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
from scipy import optimize, special


def project(row, cols):
    return tuple(row[c] for c in cols)


def class_sizes(rows, qi):
    return Counter(project(r, qi) for r in rows)


def audit(rows, qi, threshold, population_rows=None, weights=None, population_size=None):
    """Every measure by per-record enumeration; returns a dict like RiskResult.measures."""
    n = len(rows)
    out = {}
    f_of = [sum(1 for s in rows if project(s, qi) == project(r, qi)) for r in rows]
    out["prosecutor_max"] = max(1 / f for f in f_of)
    out["prosecutor_avg"] = sum(1 / f for f in f_of) / n
    out["prosecutor_above_threshold"] = sum(1 for f in f_of if 1 / f > threshold) / n
    out["sample_uniques"] = sum(1 for f in f_of if f == 1)
    if population_rows is not None:
        big_f = [sum(1 for s in population_rows if project(s, qi) == project(r, qi))
                 for r in rows]
        classes = {}
        for r, f, F in zip(rows, f_of, big_f, strict=True):
            classes[project(r, qi)] = (f, F)
        out["journalist_max"] = max(1 / F for F in big_f)
        out["marketer"] = sum(1 / F for F in big_f) / n
        out["journalist_avg"] = max(len(classes) / sum(F for _, F in classes.values()),
                                    out["marketer"])
        out["journalist_above_threshold"] = sum(1 for F in big_f if 1 / F > threshold) / n
        out["k_map"] = min(big_f)
        pop_classes = class_sizes(population_rows, qi)
        samp = class_sizes(rows, qi)
        deltas = [samp.get(k, 0) / v for k, v in pop_classes.items()]
        out["delta_min"], out["delta_max"] = min(deltas), max(deltas)
    if weights is not None or population_size is not None:
        risks = []
        for r, f in zip(rows, f_of, strict=True):
            if weights is not None:
                key = project(r, qi)
                W = sum(w for s, w in zip(rows, weights, strict=True) if project(s, qi) == key)
            else:
                W = f * population_size / n
            risks.append(bf_risk(f, W))
        out["individual_max"] = max(risks)
        out["expected_reidentifications"] = sum(risks)
        out["individual_avg"] = sum(risks) / n
        out["individual_above_threshold"] = sum(1 for x in risks if x > threshold) / n
    return out


def bf_risk(f, W):
    """E[1/F | f] with F − f ~ NegBin(f, p), p = f/W: the series Σ_h (1/h) P(F = h)."""
    p = f / W
    if p >= 1:
        return 1 / f
    q = 1 - p
    total, h = 0.0, f
    lp, lq = math.log(p), math.log(q)
    while True:
        logterm = (math.lgamma(h) - math.lgamma(f) - math.lgamma(h - f + 1) + f * lp
                   + (h - f) * lq)
        term = math.exp(logterm) / h
        total += term
        if h > f + 50 and term < 1e-18 * total:
            break
        h += 1
    return total


# ------------------------------------------------------------------ population uniqueness
def pitman_negloglik(theta, alpha, sizes):
    """−log L of the Pitman partition: explicit sums over i (no Γ identities)."""
    sizes = [int(x) for x in sizes]
    u, n = len(sizes), sum(sizes)
    ll = 0.0
    for i in range(1, u):
        ll += math.log(theta + i * alpha)
    for i in range(1, n):
        ll -= math.log(theta + i)
    for f in sizes:
        for i in range(1, f):
            ll += math.log(i - alpha)
    return -ll


def pitman_uniques(sizes, big_n):
    """Maximize the likelihood numerically; population uniques Γ(θ+1)/Γ(θ+α) N^α."""

    def obj(z):
        alpha = 1 / (1 + math.exp(-z[1]))
        theta = math.exp(z[0]) - alpha
        return pitman_negloglik(theta, alpha, sizes)

    best = None
    for z0 in ([0.0, 0.0], [3.0, -1.0], [6.0, -2.0], [1.0, 2.0]):
        res = optimize.minimize(obj, z0, method="Nelder-Mead",
                                options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 20000,
                                         "maxfev": 40000})
        if best is None or res.fun < best.fun:
            best = res
    alpha = 1 / (1 + math.exp(-best.x[1]))
    theta = math.exp(best.x[0]) - alpha
    val = math.exp(special.gammaln(theta + 1) - special.gammaln(theta + alpha)
                   + alpha * math.log(big_n))
    return val, theta, alpha, -best.fun


def hyper1(big_n, k, n):
    """P(X = 1), X ~ Hypergeometric(N, k, n), exactly."""
    if big_n - k < n - 1:
        return Fraction(0)
    return Fraction(k * math.comb(big_n - k, n - 1), math.comb(big_n, n))


def zayatz_uniques(sizes, big_n):
    sizes, big_n = [int(x) for x in sizes], int(big_n)
    n = sum(sizes)
    c = Counter(sizes)
    u = len(sizes)
    num = Fraction(c[1], u) * hyper1(big_n, 1, n)
    den = sum(Fraction(ci, u) * hyper1(big_n, i, n) for i, ci in c.items())
    return float(c[1] * (num / den) / Fraction(n, big_n))


def shlosser_k(sizes, pi):
    c = Counter(sizes)
    u = len(sizes)
    a = b = d = e = 0.0
    for i, ci in c.items():
        a += i * pi ** 2 * (1 - pi ** 2) ** (i - 1) * ci
        b += (1 - pi) ** i * ((1 + pi) ** i - 1) * ci
        d += (1 - pi) ** i * ci
        e += i * pi * (1 - pi) ** (i - 1) * ci
    return u + c[1] * (a / b) * (d / e) ** 2


def snb_probs(alpha, beta, pi, tol=1e-16):
    """P(f=1), P(f=2) by summing over the population class size F = 1 + X term by term."""
    p1 = p2 = 0.0
    x = 0
    while True:
        lnb = (special.gammaln(x + alpha) - special.gammaln(alpha) - special.gammaln(x + 1)
               + alpha * math.log(beta) + x * math.log1p(-beta))
        big_f = x + 1
        t1 = math.exp(lnb + math.log(big_f) + math.log(pi) + (big_f - 1) * math.log1p(-pi))
        t2 = 0.0
        if big_f >= 2:
            t2 = math.exp(lnb + math.log(big_f * (big_f - 1) / 2) + 2 * math.log(pi)
                          + (big_f - 2) * math.log1p(-pi))
        p1 += t1
        p2 += t2
        if x > 20 and t1 < tol * p1 and t2 < tol * max(p2, 1e-300):
            break
        x += 1
        if x > 2_000_000:
            break
    return p1, p2


def snb_uniques(sizes, big_n):
    sizes = [int(x) for x in sizes]
    n = sum(sizes)
    pi = n / big_n
    c = Counter(sizes)
    k = shlosser_k(sizes, pi)

    def resid(z):
        a, b = math.exp(z[0]), 1 / (1 + math.exp(-z[1]))
        p1, p2 = snb_probs(a, b, pi)
        return [k * p1 / c[1] - 1, k * p2 / c[2] - 1]

    best = None
    for z0 in ([0.0, 0.0], [-2.0, -3.0], [2.0, 3.0], [0.0, -8.0]):
        try:
            res = optimize.least_squares(resid, z0, xtol=1e-15, ftol=1e-15, gtol=1e-15)
        except (OverflowError, ValueError):
            continue
        if best is None or res.cost < best.cost:
            best = res
    if best is None or best.cost > 1e-16:
        return None
    a, b = math.exp(best.x[0]), 1 / (1 + math.exp(-best.x[1]))
    return k * b ** a


# --------------------------------------------------------------------- combinations/SUDA2
def uniques_and_msus(rows, qi, m):
    """{subset (tuple of names): (records unique on it, records for which it is an MSU)}."""
    out = {}
    uniq = {}
    for k in range(1, m + 1):
        for sub in itertools.combinations(qi, k):
            cnt = class_sizes(rows, sub)
            uniq[sub] = [cnt[project(r, sub)] == 1 for r in rows]
    for sub, flags in uniq.items():
        msu = 0
        for i, fl in enumerate(flags):
            if not fl:
                continue
            proper = [t for j in range(1, len(sub)) for t in itertools.combinations(sub, j)]
            if not any(uniq[t][i] for t in proper):
                msu += 1
        out[sub] = (sum(flags), msu)
    return out


def mean_abs(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
