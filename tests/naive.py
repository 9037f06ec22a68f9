"""Plain-Python, obviously-correct oracles (brute force on tiny inputs).

Every kernel in fastpriv is compared with an oracle from here, on hand-computed cases and
on random small releases (hypothesis). Oracles use only the standard library and
``fractions.Fraction`` — no NumPy, no fastpriv code — so they share no bug with the kernels.

Model-specific oracles live in ``naive_<model>.py`` and are re-exported here.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction


def as_counters(groups):
    """Groups as lists of values or value->count dicts -> list of Counters."""
    return [Counter(g) if not isinstance(g, dict) else Counter({k: v for k, v in g.items() if v})
            for g in groups]


# ----------------------------------------------------------------- classical models
def k_anonymity(groups):
    return min(sum(c.values()) for c in as_counters(groups))


def alpha(groups):
    return max(Fraction(max(c.values()), sum(c.values())) for c in as_counters(groups))


def distinct_l(groups):
    return min(len(c) for c in as_counters(groups))


def entropy_l(groups):
    best = math.inf
    for c in as_counters(groups):
        n = sum(c.values())
        h = -sum((x / n) * math.log(x / n) for x in c.values())
        best = min(best, h)
    return math.exp(best)


def recursive_c(groups, l):
    worst = Fraction(0)
    for c in as_counters(groups):
        r = sorted(c.values(), reverse=True)
        if len(r) < l:
            return math.inf
        tail = sum(r[l - 1:])
        worst = max(worst, Fraction(r[0], tail))
    return worst


def t_closeness(groups, ordered=False, order=None):
    cs = as_counters(groups)
    total = Counter()
    for c in cs:
        total.update(c)
    n = sum(total.values())
    domain = sorted(total) if order is None else list(order)
    q = {v: Fraction(total[v], n) for v in domain}
    worst = Fraction(0)
    for c in cs:
        ng = sum(c.values())
        p = {v: Fraction(c.get(v, 0), ng) for v in domain}
        if not ordered:
            emd = sum(abs(p[v] - q[v]) for v in domain) / 2
        else:
            m = len(domain)
            if m <= 1:
                emd = Fraction(0)
            else:
                run, acc = Fraction(0), Fraction(0)
                for v in domain:
                    run += p[v] - q[v]
                    acc += abs(run)
                emd = acc / (m - 1)
        worst = max(worst, emd)
    return worst


def _table_distribution(groups):
    cs = as_counters(groups)
    total = Counter()
    for c in cs:
        total.update(c)
    n = sum(total.values())
    return cs, {v: Fraction(k, n) for v, k in total.items()}


def beta_per_group(groups):
    """Basic β-likeness of every group: max over its values of (P − Q)/Q (exact)."""
    cs, q = _table_distribution(groups)
    return [max((Fraction(k, sum(c.values())) - q[v]) / q[v] for v, k in c.items())
            for c in cs]


def delta_per_group(groups):
    """δ-disclosure of every group: max over its values of |log(P/Q)|."""
    cs, q = _table_distribution(groups)
    return [max(abs(math.log(Fraction(k, sum(c.values())) / q[v])) for v, k in c.items())
            for c in cs]


# ------------------------------------------------------- model-specific oracles (re-exported)
# ``from tests import naive; naive.ck.max_disclosure(...)`` reaches every oracle from one place.
from tests import naive_anonymize as anonymize  # noqa: E402, F401  (after the shared helpers)
from tests import naive_anonymizers as anonymizers  # noqa: E402, F401
from tests import naive_ck as ck  # noqa: E402, F401
from tests import naive_foreground as foreground  # noqa: E402, F401
from tests import naive_robustness as robustness  # noqa: E402, F401
from tests import naive_scale as scale  # noqa: E402, F401
from tests import naive_skyline as skyline  # noqa: E402, F401

