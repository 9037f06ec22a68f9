"""Brute-force oracles for the counting / streaming kernels (stdlib only).

* :func:`profiles` — the canonical frequency profile of (group, value, weight) rows: groups
  in ascending order, values by count descending then value ascending (what every counting
  kernel must produce, serial or parallel, dense or sparse).
* :func:`first_appearance_codes` — codes assigned in order of first appearance (what the
  persistent label maps of the streaming accumulator assign).
"""

from __future__ import annotations

from collections import defaultdict


def profiles(groups, values, weights=None, n_groups=None):
    """``(indptr, codes, counts)`` of the rows as plain lists (zero counts dropped)."""
    acc = defaultdict(lambda: defaultdict(int))
    for i, (g, v) in enumerate(zip(groups, values, strict=True)):
        acc[g][v] += 1 if weights is None or len(weights) == 0 else weights[i]
    n = n_groups if n_groups is not None else (max(groups) + 1 if groups else 0)
    indptr, codes, counts = [0], [], []
    for g in range(n):
        items = sorted(((v, c) for v, c in acc[g].items() if c != 0),
                       key=lambda vc: (-vc[1], vc[0]))
        for v, c in items:
            codes.append(v)
            counts.append(c)
        indptr.append(len(codes))
    return indptr, codes, counts


def first_appearance_codes(keys):
    """Code of every key, new keys numbered 0, 1, … in order of first appearance."""
    seen = {}
    out = []
    for k in keys:
        if k not in seen:
            seen[k] = len(seen)
        out.append(seen[k])
    return out, list(seen)
