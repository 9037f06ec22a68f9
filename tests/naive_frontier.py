"""Slow, obvious oracles of the privacy–utility frontier (plain Python, no NumPy, no fastpriv).

* :func:`node_stats` — one node's class counts from the rows: every row's codes mapped up
  the hierarchy level by level, equal tuples counted (``collections.Counter``), classes of
  fewer than ``k`` people suppressed when they hold at most ``budget`` people;
* :func:`dominated` — Pareto dominance by comparing every pair of points.
"""

from __future__ import annotations

import math
from collections import Counter


def generalize(code, steps, a, level):
    """Code of level-0 ``code`` of attribute ``a`` at ``level`` (``steps[a][l][c]``: l → l+1)."""
    for lv in range(level):
        code = steps[a][lv][code]
    return code


def node_stats(rows, weights, steps, node, k, budget, leaves):
    """Counts of one node, as :func:`fastpriv._kernels.frontier.lattice_node_stats` gives them.

    ``rows``: tuples of level-0 codes; ``weights``: people per row; ``steps[a][l]``: the
    code at level l + 1 of each code at level l; ``leaves[a][l][c]``: the loss weight of
    code c at level l. Returns ``None`` for the kept statistics when the suppressed people
    exceed the budget.
    """
    d = len(node)
    classes = Counter()
    for row, w in zip(rows, weights, strict=True):
        classes[tuple(generalize(row[a], steps, a, node[a]) for a in range(d))] += w
    sup = sum(w for w in classes.values() if w < k)
    out = {"n_classes": len(classes), "suppressed": sup}
    if sup > budget:
        out["ok"] = False
        return out
    kept = {g: w for g, w in classes.items() if w >= k}
    out.update(ok=budget == 0 or len(kept) > 0, kept=len(kept),
               min_kept=min(kept.values(), default=0),
               sum_sq=sum(w * w for w in kept.values()),
               uniques=sum(1 for w in kept.values() if w == 1),
               kept_leaves=[sum(w * leaves[a][node[a]][g[a]] for g, w in kept.items())
                            for a in range(d)],
               histogram=sorted(Counter(kept.values()).items()))
    ent = []
    for a in range(d):
        per = Counter()
        for g, w in classes.items():
            if w < k:
                per[g[a]] += w
        ent.append(sum(s * (math.log(s / sup) / math.log(2)) for s in per.values()))
    out["sup_ent"] = ent
    return out


def dominated(points):
    """Whether each (risk, loss) point is dominated by another (≤ both, < one)."""
    return [any(q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1])
                for q in points) for p in points]
