"""Slow, obvious oracles of ARX's quality models (one Python loop over rows per formula).

Each function takes the table as a list of rows (tuples of QI values, as strings), the
hierarchies as lists of rows (``rows[i][level]`` = label of leaf ``rows[i][0]`` at
``level``, every leaf of the hierarchy — also values absent from the table), a node (one
level per QI) and ``k``: with ``suppress=True`` the rows of classes smaller than ``k`` are
suppressed (ARX: classes failing k-anonymity are the outliers). Formulas follow ARX's
classes in ``org.deidentifier.arx.metric.v2`` literally:

* ``MetricMDNMLoss`` (gs-factor 0.5): per attribute, kept rows cost the domain share of their
  generalized value, suppressed rows 1; normalized (x − n/D)/(n − n/D), clipped at 0, rounded
  down to 10 decimals; geometric mean Π (1 + v)^(1/d) − 1.
* ``MetricMDNUEntropyPrecomputed``: Σ_rows −log2(#rows with the original value / #rows with
  its generalized value), per attribute rounded down to 10 decimals, summed.
* ``MetricMDNUNMEntropy``: that plus, per attribute, Σ over suppressed rows
  −log2(#suppressed rows with the same generalized value / #suppressed rows).
* ``MetricMDNMPrecision``: mean over attributes of (Σ_kept level/(height−1) + #suppressed)/n.
* ``MetricSDAECS``: n / (#kept classes + 1 if any row is suppressed).
* ``MetricSDNMDiscernability``: Σ_kept classes n_g² + #suppressed·n.
* ``MetricMDHeight``: Σ levels.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction


def _arx_round(x: float) -> float:
    return math.floor(x * 1e10) / 1e10


def _log2(x: float) -> float:
    return math.log(x) / math.log(2)


def generalize(rows, hierarchies, node):
    """Generalized tuple of every row at ``node``."""
    up = [{r[0]: r for r in h} for h in hierarchies]
    return [tuple(up[a][v][lev] for a, (v, lev) in enumerate(zip(row, node, strict=True)))
            for row in rows]


def suppressed_rows(rows, hierarchies, node, k, suppress):
    """Whether each row is suppressed (its class has fewer than ``k`` rows)."""
    gen = generalize(rows, hierarchies, node)
    size = Counter(gen)
    return [suppress and size[g] < k for g in gen]


def quality(rows, hierarchies, node, measure, k=1, suppress=False, out=None):
    """ARX's value of ``measure`` at ``node`` (see the module docstring).

    ``out``: whether each row is suppressed, when given (else classes smaller than ``k``
    with ``suppress=True``). ``"precision"`` is −Prec, the value the search minimizes.
    """
    n = len(rows)
    d = len(node)
    gen = generalize(rows, hierarchies, node)
    if out is None:
        out = suppressed_rows(rows, hierarchies, node, k, suppress)
    n_sup = sum(out)
    classes = Counter(g for g, o in zip(gen, out, strict=True) if not o)
    if measure == "height":
        return float(sum(node))
    if measure == "precision":
        heights = [len(h[0]) - 1 for h in hierarchies]
        return -(1.0 - sum(lev / h if h > 0 else 0.0 for lev, h in zip(node, heights,
                                                                      strict=True)) / d)
    if measure == "discernibility":
        return float(sum(c * c for c in classes.values()) + n_sup * n)
    if measure == "aecs":
        return n / (len(classes) + (1 if n_sup else 0))
    if measure == "nm_precision":
        total = 0.0
        for a, lev in enumerate(node):
            h = len(hierarchies[a][0]) - 1
            x = 0.0
            for o in out:
                x += 1.0 if o else (lev / h if h > 0 else 0.0)
            total += (x / n) / d
        return total
    if measure == "loss":
        r = 1.0
        for a, lev in enumerate(node):
            h = hierarchies[a]
            D = len(h)
            x = Fraction(0)            # exact: ARX's floor to 10 decimals is discontinuous
            for g, o in zip(gen, out, strict=True):
                x += 1 if o else Fraction(sum(1 for hr in h if hr[lev] == g[a]), D)
            lo = Fraction(n, D)
            v = 0.0 if n - lo <= 0 else \
                math.floor(max((x - lo) / (n - lo), 0) * 10 ** 10) / 1e10
            r *= (v + 1.0) ** (1.0 / d)
        return r - 1.0
    if measure in ("entropy", "nm_entropy"):
        total = 0.0
        for a in range(d):
            orig = Counter(row[a] for row in rows)
            genc = Counter(g[a] for g in gen)
            v = 0.0
            for row, g in zip(rows, gen, strict=True):
                v += _log2(orig[row[a]] / genc[g[a]])
            if measure == "nm_entropy" and n_sup:
                supc = Counter(g[a] for g, o in zip(gen, out, strict=True) if o)
                for g, o in zip(gen, out, strict=True):
                    if o:
                        v += _log2(supc[g[a]] / n_sup)
            total += 0.0 if v == 0.0 else _arx_round(-v)
        return total
    raise ValueError(measure)


def optimum(rows, hierarchies, measure, k, fraction):
    """ARX's global optimum by brute force: every node of the lattice, budget ⌊f·n⌋.

    A node satisfies when the rows of its classes smaller than ``k`` number at most the
    budget (and, as fastpriv requires, some class is kept). Returns ``(value, node)`` of
    the minimum of (value, height, node); ``None`` when no node satisfies.
    """
    import itertools

    n = len(rows)
    budget = math.floor(fraction * n)
    best = None
    heights = [len(h[0]) for h in hierarchies]
    for node in itertools.product(*[range(h) for h in heights]):
        out = suppressed_rows(rows, hierarchies, node, k, True)
        s = sum(out)
        if s > budget or (budget > 0 and s == n) or (budget == 0 and s > 0):
            continue
        v = quality(rows, hierarchies, node, measure, k, budget > 0)
        key = (v, sum(node), node)
        if best is None or key < best:
            best = key
    return None if best is None else (best[0], best[2])


# ---------------------------------------------------------------------- ARX's risk criteria
def class_loss(size, values, hierarchies, node):
    """ARX's loss of one class (``MetricMDNMLoss`` of an entry, the order of suppression).

    Π_A (size·share_A + 1)^(1/d) − 1, share_A = hierarchy rows under the class's value of
    attribute A at its level / hierarchy rows.
    """
    d = len(node)
    r = 1.0
    for a, lev in enumerate(node):
        h = hierarchies[a]
        share = sum(1 for hr in h if hr[lev] == values[a]) / len(h)
        r *= (size * share + 1.0) ** (1.0 / d)
    return r - 1.0


def arx_enforce(sizes, holds, budget, already):
    """ARX's ``RiskBasedCriterion.enforce``, transcribed line by line from its Java.

    ``sizes`` are the entries (classes kept so far) in ARX's order; returns how many leading
    entries end up suppressed. ``HashGroupifyDistribution.suppressWhileNotFulfilledBinary``
    with its per-entry suppressed flags; the criterion is asked on the unsuppressed entries
    (every entry suppressed: it holds); ABORT when it fails with more than ``budget``
    records suppressed (``already`` before).
    """
    if holds([s for s in sizes]):
        return 0
    if not sizes:
        return 0
    suppressed = [False] * len(sizes)

    def state():
        kept = [s for s, x in zip(sizes, suppressed, strict=True) if not x]
        if not kept or holds(kept):
            return "FULFILLED"
        num = already + sum(s for s, x in zip(sizes, suppressed, strict=True) if x)
        return "ABORT" if num > budget else "NOT_FULFILLED"

    def java_div2(x):
        return int(x / 2)          # Java truncates toward zero

    low, high = 0, len(sizes) - 1
    mid = java_div2(low + high)
    st = "ABORT"
    for i in range(low, mid + 1):
        suppressed[i] = True
    while low <= high:
        st = state()
        if st == "ABORT":
            break
        if st == "FULFILLED":
            high = mid - 1
            mid = java_div2(low + high)
            i = mid + 1
            while i < len(sizes) and suppressed[i]:
                suppressed[i] = False
                i += 1
        else:
            low = mid + 1
            mid = java_div2(low + high)
            for i in range(low, mid + 1):
                suppressed[i] = True
    if st != "ABORT":
        st = state()
        if st == "NOT_FULFILLED" and mid + 1 < len(sizes) and not suppressed[mid + 1]:
            suppressed[mid + 1] = True
    assert suppressed == sorted(suppressed, reverse=True)   # a prefix
    return sum(suppressed)


def risk_suppressed(rows, hierarchies, node, k, risk_parts, budget, by_loss):
    """Rows suppressed at ``node`` under ARX's rules, one flag per row.

    Classes smaller than ``k`` first (k-anonymity's outliers); then each risk part
    (``holds(sizes)``) enforced on the classes left, in ARX's order: size, the class's loss
    when ``by_loss``, first row.
    """
    gen = generalize(rows, hierarchies, node)
    size = Counter(gen)
    first = {}
    for i, g in enumerate(gen):
        first.setdefault(g, i)
    out_class = {g: size[g] < k for g in size}
    already = sum(size[g] for g in size if out_class[g])
    for holds in risk_parts:
        left = [g for g in size if not out_class[g]]
        left.sort(key=lambda g: (size[g],
                                 class_loss(size[g], g, hierarchies, node) if by_loss else 0,
                                 first[g]))
        j = arx_enforce([size[g] for g in left], holds, budget, already)
        for g in left[:j]:
            out_class[g] = True
            already += size[g]
    return [out_class[g] for g in gen]
