"""Blocks of disjoint classes (issue 27): fail-fast per block, two-thread roll-ups, tables.

The bottom node's classes are sorted along one attribute's hierarchy, so at any node whose
level of that attribute is below the top no class spans two blocks of equal code. The
roll-up completes the classes block by block (failing fast once the suppressed
individuals exceed the budget) and large roll-ups are split between two threads at a
block boundary. These tests lower the split threshold to 0 so that every roll-up of the
small hypothesis tables takes the split path, and check the blocks of every materialized
node directly.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fastpriv._threads as T
import fastpriv.anonymize.lattice as L
import fastpriv.predicates as P
from fastpriv._kernels.lattice import joint_tables
from fastpriv._validation import kernel_array
from fastpriv.anonymize.lattice import GeneralizationLattice
from tests.lattice_oracle import A_VALUES, WIDE_HIER, check_rollup_search, wide_tables


def _two_threads(n_jobs, **kw):
    return 2


@settings(max_examples=40, deadline=None)
@given(rows=wide_tables(), frac=st.sampled_from([0.0, 0.05, 0.1, 0.3]), k=st.integers(1, 5),
       tiny_cache=st.booleans(), split=st.sampled_from([0, 8, 1 << 40]))
def test_split_rollup_search_equals_exhaustive_oracle(rows, frac, k, tiny_cache, split):
    """k-anonymity search with block splits on two threads equals plain-Python checking."""
    with mock.patch.object(L, "_SPLIT_ROWS", split), \
            mock.patch.object(T, "resolve_n_jobs", _two_threads):
        check_rollup_search(
            rows=rows, frac=frac, k=k, which=0, tiny_cache=tiny_cache)


def _decode(mat: L._Materialized, a: int) -> np.ndarray:
    """Code of attribute ``a`` (at the node's level) of every row of a packed node."""
    for g in range(len(mat.gptr) - 1):
        attrs = [int(x) for x in mat.gattr[mat.gptr[g]:mat.gptr[g + 1]]]
        if a in attrs:
            x = mat.q[g].astype(np.int64)
            for b in reversed(attrs):
                if b == a:
                    return x % int(mat.scard[b])
                x = x // int(mat.scard[b])
    return np.zeros(mat.m, dtype=np.int64)   # one code: left out of the packing


def _check_blocks(eng: L._RollUp) -> int:
    """Every block boundary of every materialized node separates codes; return #checked."""
    n = 0
    for mat in eng.bottoms + eng.cache:
        if mat.part < 0:
            continue
        a = mat.part
        own = int(mat.levels[a])
        codes = _decode(mat, a)
        for lev, bnd in mat.bounds.items():
            assert own <= lev < eng.lat.heights[a] - 1
            up = np.array([eng.maps[eng.off_tab[a, own, lev] + c] for c in codes], np.int64)
            assert bnd[0] == 0 and bnd[-1] == mat.m and np.all(np.diff(bnd) > 0)
            for p in range(len(bnd) - 1):
                block = up[bnd[p]:bnd[p + 1]]
                assert np.all(block == block[0])             # one code per block
                if p:
                    assert up[bnd[p] - 1] != block[0]         # a boundary changes the code
            n += 1
    return n


@settings(max_examples=30, deadline=None)
@given(rows=wide_tables(), frac=st.sampled_from([0.0, 0.05, 0.2]), k=st.integers(1, 4),
       split=st.sampled_from([0, 1 << 40]))
@example(rows=[{"a": a, "b": "x", "c": "m", "d": 0, "s": "s0"} for a in A_VALUES] * 2,
         frac=0.05, k=3, split=0)
def test_blocks_of_materialized_nodes_and_fused_checks(rows, frac, k, split):
    """Fused (fail-fast, split) checks of every node equal the release's class sizes, and
    the blocks of every cached node hold one code of the partition attribute each."""
    qi = ["a", "b", "c", "d"]
    table = pa.table({c: [r[c] for r in rows] for c in qi + ["s"]})
    lat = GeneralizationLattice(table, qi, "s", WIDE_HIER)
    budget = int(frac * lat.n_rows)
    with mock.patch.object(L, "_SPLIT_ROWS", split):
        eng = L._RollUp(lat, P.KAnonymity(k), budget, threads=2)
        for node in lat._node_tuples():
            res, (sup, kept, sq, _) = eng.check(node)
            sizes = lat.release(node).sizes
            small = sizes < k
            want = int(sizes[small].sum()) <= budget and (budget == 0 or bool((~small).any()))
            assert res.ok == want, node
            if res.ok:
                assert sup == int(sizes[small].sum()) and kept == int((~small).sum())
                assert sq == int((sizes[~small].astype(np.int64) ** 2).sum())
    _check_blocks(eng)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_joint_tables_equal_decoding(data):
    """Each packed code's table entry is the packed code of its mapped digits."""
    d = data.draw(st.integers(1, 5))
    scard = [data.draw(st.integers(1, 6)) for _ in range(d)]
    tcard = [data.draw(st.integers(1, c)) for c in scard]
    maps, offsets = [], []
    for c, t in zip(scard, tcard, strict=True):
        offsets.append(len(maps))
        maps += [data.draw(st.integers(0, t - 1)) for _ in range(c)]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, d - 1), max_size=d)) if d > 1 else []))
    gptr = [0] + cuts + [d]
    gattr = list(range(d))
    if data.draw(st.booleans()):
        gattr = gattr[::-1]
    tab, toff, gcard = joint_tables(kernel_array(gptr, np.int64), kernel_array(gattr, np.int64),
                                    kernel_array(scard, np.int64), kernel_array(maps, np.int32),
                                    np.array(offsets, np.int64), np.array(tcard, np.int64))
    for g in range(len(gptr) - 1):
        attrs = gattr[gptr[g]:gptr[g + 1]]
        assert gcard[g] == int(np.prod([tcard[a] for a in attrs]))
        size = int(np.prod([scard[a] for a in attrs]))
        for code in range(size):
            x, key, mult = code, 0, 1
            for a in reversed(attrs):       # the last attribute is the lowest digit
                digit = x % scard[a]
                x //= scard[a]
                key += maps[offsets[a] + digit] * mult
                mult *= tcard[a]
            assert tab[toff[g] + code] == key


def _oracle_path(node, grid, heights):
    """Flash's upward path in plain Python (the reference the search kernel follows)."""
    path, cur = [tuple(node)], list(node)
    rel_step = [1.0 / max(h - 1, 1) for h in heights]
    while True:
        nxt = None
        rel = sorted((cur[a] * rel_step[a] if h > 1 else 0.0, a)
                     for a, h in enumerate(heights) if cur[a] < h - 1)
        for _, a in rel:
            cur[a] += 1
            if grid[tuple(cur)] == 0:
                nxt = tuple(cur)
                break
            cur[a] -= 1
        if nxt is None:
            return path
        path.append(nxt)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_upward_path_equals_oracle(data):
    """The path kernel visits the same nodes as the plain-Python path on any tagging."""
    from fastpriv._kernels.lattice import upward_path

    heights = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    grid = np.array(data.draw(st.lists(st.sampled_from([0, 0, 1, -1]),
                                       min_size=int(np.prod(heights)),
                                       max_size=int(np.prod(heights)))),
                    dtype=np.int8).reshape(heights)
    node = tuple(data.draw(st.integers(0, h - 1)) for h in heights)
    strides = np.cumprod((heights[1:] + (1,))[::-1])[::-1]
    got = upward_path(grid.reshape(-1), kernel_array(strides, np.int64),
                      kernel_array(heights, np.int64), kernel_array(node, np.int64),
                      kernel_array([1.0 / max(h - 1, 1) for h in heights], np.float64))
    want = [int(np.ravel_multi_index(n, heights)) for n in _oracle_path(node, grid, heights)]
    assert got.tolist() == want


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_tag_box_equals_slicing(data):
    """Tagging a node's up-set / down-set equals NumPy box slicing; counts new tags."""
    from fastpriv._kernels.lattice import tag_box

    heights = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    size = int(np.prod(heights))
    grid = np.array(data.draw(st.lists(st.sampled_from([0, 0, 1, -1]), min_size=size,
                                       max_size=size)), dtype=np.int8).reshape(heights)
    node = tuple(data.draw(st.integers(0, h - 1)) for h in heights)
    up = data.draw(st.booleans())
    value = 1 if up else -1
    want = grid.copy()
    box = tuple(slice(x, None) if up else slice(0, x + 1) for x in node)
    new = int(np.count_nonzero(want[box] == 0))
    want[box] = value
    flat = grid.reshape(-1)
    strides = np.cumprod((heights[1:] + (1,))[::-1])[::-1]
    got = tag_box(flat, kernel_array(strides, np.int64), kernel_array(heights, np.int64),
                  kernel_array(node, np.int64), np.int64(1 if up else 0), np.int64(value))
    assert got == new
    assert np.array_equal(grid, want)
