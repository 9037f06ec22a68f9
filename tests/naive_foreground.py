"""Brute-force oracles for the foreground-knowledge attack (stdlib + fractions only).

Everything here is the literal definition, by enumeration, with no cleverness:

* a *group* is ``(signatures, n_x)``: the signature code of each tuple (``-1`` = a tuple
  whose signature is unreliable; its probability is the fixed rate) and the number of x;
* the likelihood of a group is E_n(f) = Σ over the C(N, n) placements of x of
  Π_j (f_j if t_j is x else 1 - f_j) (binary model, Wong et al. Section 3);
* the posterior p(t_j : x) is the share of that sum where t_j is x (equations (1)-(3));
* the paper's equations (4)-(6): f_i = Σ_k |L_k(s_i)| p_k(s_i : x) / Σ_k |L_k(s_i)|; iterating
  that map is plain EM;
* "plain Newton" is Newton's method on F(f) = f - G(f) = 0 (the paper's choice), with a
  finite-difference Jacobian and no safeguard: it may stop at a saddle of the likelihood.

Works with floats or :class:`fractions.Fraction` (exact) probabilities.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

__all__ = [
    "group_weight",
    "group_posteriors",
    "likelihood",
    "log_likelihood",
    "em_map",
    "plain_em",
    "plain_newton",
    "naive_start",
    "reliable_signatures",
    "true_distribution",
    "random_release",
    "pooled",
    "brute_force_mle",
]


def _fvec(sigs, f, fixed_rate):
    out = []
    for s in sigs:
        if s < 0:
            if fixed_rate is None:
                raise ValueError("a tuple has signature -1 but no fixed_rate was given")
            out.append(fixed_rate)
        else:
            out.append(f[s])
    return out


def group_weight(fs, n):
    """E_n(f): Σ over placements of n x's among the tuples of Π f / (1 - f)."""
    N = len(fs)
    tot = 0 * fs[0] if fs else 0
    for pos in itertools.combinations(range(N), n):
        s = set(pos)
        w = 1
        for i in range(N):
            w = w * (fs[i] if i in s else 1 - fs[i])
        tot = tot + w
    return tot


def group_posteriors(fs, n):
    """p(t_j : x) for every tuple of one group, by enumerating the possible worlds."""
    N = len(fs)
    acc = [0] * N
    tot = 0
    for pos in itertools.combinations(range(N), n):
        s = set(pos)
        w = 1
        for i in range(N):
            w = w * (fs[i] if i in s else 1 - fs[i])
        tot = tot + w
        for i in pos:
            acc[i] = acc[i] + w
    if tot == 0:
        raise ZeroDivisionError("E_n(f) = 0: no possible world has positive probability")
    return [a / tot for a in acc]


def likelihood(groups, f, fixed_rate=None):
    """Π_k E_{n_k}(f restricted to group k) (a Fraction when the inputs are exact)."""
    out = 1
    for sigs, n in groups:
        out = out * group_weight(_fvec(sigs, f, fixed_rate), n)
    return out


def log_likelihood(groups, f, fixed_rate=None):
    """log of :func:`likelihood` (``-inf`` when it is zero)."""
    tot = 0.0
    for sigs, n in groups:
        w = group_weight(_fvec(sigs, f, fixed_rate), n)
        if w <= 0:
            return -math.inf
        tot += math.log(w)
    return tot


def em_map(groups, f, fixed_rate=None):
    """The right-hand side of equations (4)-(6): the expected share of x per signature.

    Signatures without any tuple keep their value.
    """
    m = len(f)
    num = [0] * m
    den = [0] * m
    for sigs, n in groups:
        p = group_posteriors(_fvec(sigs, f, fixed_rate), n)
        for s, pj in zip(sigs, p, strict=True):
            if s >= 0:
                num[s] = num[s] + pj
                den[s] += 1
    return [num[i] / den[i] if den[i] else f[i] for i in range(m)]


def plain_em(groups, start, fixed_rate=None, iterations=20000, tol=1e-13):
    """Iterate :func:`em_map` from ``start`` until the change is below ``tol``."""
    f = list(start)
    for _ in range(iterations):
        g = em_map(groups, f, fixed_rate)
        if max(abs(a - b) for a, b in zip(f, g, strict=True)) <= tol:
            return g
        f = g
    return f


def _solve(A, b):
    n = len(b)
    M = [list(map(float, row)) + [float(bb)] for row, bb in zip(A, b, strict=True)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        if abs(M[p][c]) < 1e-300:
            raise ZeroDivisionError("singular Jacobian")
        M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c:
                k = M[r][c] / M[c][c]
                for cc in range(c, n + 1):
                    M[r][cc] -= k * M[c][cc]
    return [M[i][n] / M[i][i] for i in range(n)]


def plain_newton(groups, start, fixed_rate=None, iterations=100, tol=1e-13, h=1e-7):
    """Newton's method on f - G(f) = 0 (finite-difference Jacobian), no safeguards.

    This is the paper's solver; it converges to whatever root is nearby — local maximum,
    saddle or minimum of the likelihood alike.
    """
    f = [float(v) for v in start]
    m = len(f)
    for _ in range(iterations):
        G = em_map(groups, f, fixed_rate)
        F = [a - b for a, b in zip(f, G, strict=True)]
        if max(abs(v) for v in F) <= tol:
            break
        J = [[0.0] * m for _ in range(m)]
        for c in range(m):
            fp = list(f)
            fp[c] += h
            Gp = em_map(groups, fp, fixed_rate)
            for r in range(m):
                J[r][c] = ((fp[r] - Gp[r]) - F[r]) / h
        d = _solve(J, [-v for v in F])
        f = [a + b for a, b in zip(f, d, strict=True)]
    return f


def naive_start(groups, m):
    """The within-group frequencies: every tuple of group k gets n_k / N_k."""
    num = [0] * m
    den = [0] * m
    for sigs, n in groups:
        r = Fraction(n, len(sigs))
        for s in sigs:
            if s >= 0:
                num[s] += r
                den[s] += 1
    return [num[i] / den[i] if den[i] else Fraction(0) for i in range(m)]


def reliable_signatures(rows, qi, min_support, max_size=None):
    """Every attribute subset of ``qi`` (no pruning) -> {signature tuple: count >= min_support}.

    ``rows`` is a list of dicts. Subsets without any reliable signature are left out.
    """
    out = {}
    top = len(qi) if max_size is None else max_size
    for size in range(1, top + 1):
        for A in itertools.combinations(qi, size):
            cnt = {}
            for r in rows:
                key = tuple(r[a] for a in A)
                cnt[key] = cnt.get(key, 0) + 1
            rel = {k: v for k, v in cnt.items() if v >= min_support}
            if rel:
                out[A] = rel
    return out


def true_distribution(rows, A, sensitive, xset):
    """#(s ∧ x) / #s per signature s of attribute set A (x = a set of values)."""
    cnt = {}
    hit = {}
    for r in rows:
        key = tuple(r[a] for a in A)
        cnt[key] = cnt.get(key, 0) + 1
        if r[sensitive] in xset:
            hit[key] = hit.get(key, 0) + 1
    return {k: Fraction(hit.get(k, 0), v) for k, v in cnt.items()}


def random_release(rng: random.Random, m, n_groups, max_size=4):
    """A small random system: groups of 1..max_size tuples with random signatures and n_x."""
    groups = []
    for _ in range(n_groups):
        N = rng.randint(1, max_size)
        sigs = [rng.randrange(m) for _ in range(N)]
        groups.append((sigs, rng.randint(0, N)))
    return groups


def pooled(groups, m):
    """The ``unreliable="pooled"`` system: every ``-1`` tuple becomes signature ``m``."""
    return [([m if s < 0 else s for s in sigs], n) for sigs, n in groups]


def brute_force_mle(groups, m, fixed_rate=None, grid=40, rounds=40):
    """Maximise :func:`log_likelihood` over [0, 1]^m by brute force.

    Every point of a regular grid (``grid`` + 1 values per coordinate), then, from the
    best one, coordinate-wise golden-section searches on [0, 1] repeated ``rounds`` times.
    Slow and simple; meant for m <= 3. Returns ``(f, log_likelihood)``.
    """
    pts = [i / grid for i in range(grid + 1)]
    best, best_ll = None, -math.inf
    for f in itertools.product(pts, repeat=m):
        ll = log_likelihood(groups, list(f), fixed_rate)
        if ll > best_ll:
            best, best_ll = list(f), ll
    g = (math.sqrt(5) - 1) / 2
    for _ in range(rounds):
        for i in range(m):
            lo = max(0.0, best[i] - 2.0 / grid)
            hi = min(1.0, best[i] + 2.0 / grid)

            def at(v, i=i):
                f = list(best)
                f[i] = v
                return log_likelihood(groups, f, fixed_rate)

            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
            fa, fb = at(a), at(b)
            for _ in range(60):
                if fa < fb:
                    lo, a, fa = a, b, fb
                    b = lo + g * (hi - lo)
                    fb = at(b)
                else:
                    hi, b, fb = b, a, fa
                    a = hi - g * (hi - lo)
                    fa = at(a)
            for v in (lo, hi, (lo + hi) / 2):
                ll = at(v)
                if ll > best_ll:
                    best[i], best_ll = v, ll
    return best, best_ll
