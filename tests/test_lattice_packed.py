"""Roll-up over packed attribute groups (issue 27): the search equals the plain-Python oracle.

Small tables never reach the packing threshold (rows/16), so these tests lower it: every
materialized node then packs as many attributes per group as fit, and a roll-up gathers
once per group.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv.anonymize.lattice as L
import fastpriv.predicates as P
from fastpriv.anonymize.lattice import GeneralizationLattice
from tests.lattice_oracle import (
    ROLLUP_CRITERIA,
    WIDE_HIER,
    check_rollup_search,
    wide_tables,
)


@settings(max_examples=40, deadline=None)
@given(rows=wide_tables(), frac=st.sampled_from([0.0, 0.05, 0.1, 0.3]), k=st.integers(1, 5),
       which=st.integers(0, len(ROLLUP_CRITERIA) - 1), tiny_cache=st.booleans(),
       limit=st.sampled_from([2, 6, 24, 8192]))
def test_packed_rollup_search_equals_exhaustive_oracle(rows, frac, k, which, tiny_cache, limit):
    """Minimal nodes, best, scores and the optimum equal exhaustive plain-Python checking."""
    with mock.patch.object(L, "_PACK_ROWS", 1), mock.patch.object(L, "_PACK_LIMIT", limit):
        check_rollup_search(
            rows=rows, frac=frac, k=k, which=which, tiny_cache=tiny_cache)


@settings(max_examples=30, deadline=None)
@given(rows=wide_tables(), limit=st.sampled_from([2, 6, 24, 8192]))
def test_packed_classes_equal_cell_regrouping(rows, limit):
    """Every node: class sizes rolled up from packed sources equal the cell regroup."""
    qi = ["a", "b", "c", "d"]
    table = pa.table({c: [r[c] for r in rows] for c in qi + ["s"]})
    lat = GeneralizationLattice(table, qi, "s", WIDE_HIER)
    with mock.patch.object(L, "_PACK_ROWS", 1), mock.patch.object(L, "_PACK_LIMIT", limit):
        for crit in (P.KAnonymity(2), P.DistinctLDiversity(2)):
            eng = L._RollUp(lat, crit, 0)
            for node in lat._node_tuples():
                res, (sup, kept, sq, _) = eng.check(node, budget=lat.n_rows, bound=True)
                sizes = lat.release(node).sizes
                ok = crit.group_ok(lat.release(node))
                assert res.n_groups == sizes.shape[0]
                assert sup == int(sizes[~ok].sum()) and kept == int(ok.sum())
                assert sq == int((sizes[ok].astype(np.int64) ** 2).sum())
