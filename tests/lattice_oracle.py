"""Shared fixtures of the lattice tests: small hierarchies, table strategies, and the roll-up
search checked against plain-Python enumeration of every node.

``tests/test_lattice.py``, ``tests/test_lattice_blocks.py`` and ``tests/test_lattice_packed.py``
each run :func:`check_rollup_search` under their own settings (plain, block splits on two
threads, packed attribute groups); none of them drives another file's test.
"""

from __future__ import annotations

import math
from fractions import Fraction
from unittest import mock

import pyarrow as pa
from hypothesis import strategies as st

import fastpriv.anonymize.lattice as L
import fastpriv.predicates as P
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.hierarchies import Hierarchy
from tests.naive_anonymize import (
    all_nodes,
    best_node,
    discernibility,
    group_passes,
    minimal_nodes,
    node_groups,
    table_distribution,
)

B_ROWS = [["x", "xy", "*"], ["y", "xy", "*"], ["z", "zw", "*"], ["w", "zw", "*"]]
A_VALUES = list(range(8))


def hier_dicts():
    """The hierarchies of ``a``, ``b`` and ``c`` as value -> levels dicts (for the oracle)."""
    a = Hierarchy.intervals(A_VALUES, [2, 4], name="a")
    return {"a": {int(r[0]): list(r) for r in a.rows},
            "b": {r[0]: r for r in B_ROWS},
            "c": {"m": ["m", "*"], "f": ["f", "*"]}}


# ---------------------------------------------------------------------- issue 27: roll-up
ROLLUP_CRITERIA = [
    (lambda k: P.KAnonymity(k), lambda k: [("k", k)]),
    (lambda k: P.DistinctLDiversity(2) & P.KAnonymity(k), lambda k: [("distinct", 2), ("k", k)]),
    (lambda k: P.TCloseness(0.4), lambda k: [("t", Fraction(2, 5))]),
    (lambda k: P.CKSafety(0.8, 1, "negations"), lambda k: [("ck_neg", Fraction(4, 5), 1)]),
]


@st.composite
def wide_tables(draw):
    """Up to 60 rows over 4 QIs (lattice 4·3·2·3 = 72 nodes)."""
    n = draw(st.integers(1, 60))
    rows = []
    for _ in range(n):
        rows.append({"a": draw(st.sampled_from(A_VALUES)),
                     "b": draw(st.sampled_from("xyzw")),
                     "c": draw(st.sampled_from("mf")),
                     "d": draw(st.sampled_from([0, 1, 2, 3, 4, 5])),
                     "s": draw(st.sampled_from(["s0", "s1", "s2", "s3"]))})
    return rows


WIDE_HIER = {"a": [2, 4, "*"], "b": Hierarchy(B_ROWS, name="b"), "c": "suppress",
             "d": [3, "*"]}


def wide_dicts():
    """:func:`hier_dicts` with the hierarchy of ``d`` added (for :data:`WIDE_HIER`)."""
    h = hier_dicts()
    d = Hierarchy.intervals(list(range(6)), [3], name="d")
    h["d"] = {int(r[0]): list(r) for r in d.rows}
    return h


def check_rollup_search(rows, frac, k, which, tiny_cache):
    """Roll-up checks, grid tagging, counted scores and objective='optimal' against plain
    Python: every node's groups recomputed from the rows, failing groups suppressed.

    Returns False (and checks nothing) for a suppression budget with a criterion that is not
    union-monotone: the search is exhaustive there, which
    ``test_lattice.py::test_suppression_equals_exhaustive`` covers; True otherwise.
    """
    qi = ["a", "b", "c", "d"]
    make, oracle = ROLLUP_CRITERIA[which]
    crit, crits = make(k), oracle(k)
    table = pa.table({c: [r[c] for r in rows] for c in qi + ["s"]})
    lat = GeneralizationLattice(table, qi, "s", WIDE_HIER)
    hier, q, n = wide_dicts(), table_distribution(rows, "s"), len(rows)
    budget = math.floor(frac * n)

    def passes(g):
        return all(group_passes(g, c, q) for c in crits)

    def groups(node):
        return list(node_groups(rows, qi, "s", hier, node).values())

    def sat(node):
        gs = groups(node)
        bad = sum(len(g) for g in gs if not passes(g))
        if budget == 0:
            return bad == 0
        return bad <= budget and any(passes(g) for g in gs)

    def loss(node):
        return discernibility(groups(node), passes, n) if budget else \
            sum(len(g) ** 2 for g in groups(node))

    if budget and not getattr(crit, "union_monotone", False):
        return False
    # a tiny cache: evictions at every materialization
    with mock.patch.object(L, "_CACHE_BYTES", 256 if tiny_cache else L._CACHE_BYTES):
        res = lat.search(crit, suppression=frac, materialize=False)
    want = minimal_nodes(lat.heights, sat)
    assert list(res.minimal) == want
    assert res.best == best_node(want, loss)
    for m in want:
        assert res.scores[m] == float(loss(m))
    all_sat = [nd for nd in all_nodes(lat.heights) if sat(nd)]
    assert res.n_satisfying == len(all_sat)
    opt = lat.search(crit, suppression=frac, materialize=False, objective="optimal")
    assert opt.minimal == res.minimal
    assert opt.best == best_node(all_sat, loss)
    if opt.best is not None:
        assert opt.scores[opt.best] == float(loss(opt.best))
    exh = lat.search(crit, suppression=frac, strategy="exhaustive", materialize=False)
    assert exh.minimal == res.minimal and exh.best == res.best
    return True


# ---------------------------------------------------------------------- issue 48: optima
@st.composite
def quality_tables(draw, max_rows=24):
    """A small table and its hierarchies (``rows[i][level]``, leaves absent from the data too).

    Returns ``(table, {name: Hierarchy}, hierarchy rows per column)``.
    """
    from fastpriv.hierarchies import Hierarchy

    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, max_rows))
    hier, cols = {}, {}
    for a in range(d):
        m = draw(st.integers(1, 5))
        leaves = [f"a{a}v{i}" for i in range(m + draw(st.integers(0, 2)))]
        n_lev = draw(st.integers(1, 3))
        rows = [[x] for x in leaves]
        if n_lev >= 2:
            b = draw(st.integers(1, max(1, len(leaves) - 1)))
            for r in rows:
                r.append(f"a{a}g{draw(st.integers(0, b - 1))}")
        if n_lev >= 3:
            for r in rows:
                r.append("*")
        hier[f"q{a}"] = Hierarchy(rows, name=f"q{a}")
        cols[f"q{a}"] = [leaves[draw(st.integers(0, m - 1))] for _ in range(n)]
    table = pa.table(cols)
    return table, hier, [hier[c].rows for c in table.schema.names]


def optimum_oracle(rows, hrows, measure, sat_out):
    """The optimum by plain enumeration: ``(value, node)`` minimizing (value, height, node).

    ``sat_out(node)`` gives ``(satisfies, suppressed-row flags)``; values come from
    :func:`tests.naive_quality.quality` with those rows suppressed. ``None`` if no node
    satisfies.
    """
    import itertools

    from tests import naive_quality

    best = None
    for node in itertools.product(*[range(len(h[0])) for h in hrows]):
        ok, out = sat_out(node)
        if not ok:
            continue
        v = naive_quality.quality(rows, hrows, node, measure, out=out)
        if best is None or (v, sum(node), node) < best:
            best = (v, sum(node), node)
    return None if best is None else (best[0], best[2])
