"""n_jobs: the thread-count context manager, and parallel kernels == serial kernels == oracle."""

import threading
from itertools import pairwise

import numba
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastpriv import Release
from fastpriv._kernels import counting as K
from fastpriv._threads import current_threads, n_jobs, pool_size, resolve_n_jobs
from fastpriv._validation import kernel_array
from tests.naive_scale import profiles

EMPTY = kernel_array(np.empty(0, dtype=np.int64), np.int64)


# ----------------------------------------------------------------- context manager
def test_n_jobs_sets_and_restores():
    before = current_threads()
    with n_jobs(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert current_threads() == before
    with n_jobs(None) as n:
        assert n == before
    with n_jobs(-1) as n:
        assert n == pool_size()
    assert current_threads() == before


def test_n_jobs_restores_after_an_exception():
    before = current_threads()
    with pytest.raises(RuntimeError), n_jobs(1):
        raise RuntimeError("boom")
    assert current_threads() == before


def test_n_jobs_is_thread_local():
    seen = []
    with n_jobs(1):
        t = threading.Thread(target=lambda: seen.append(current_threads()))
        t.start()
        t.join()
    assert seen == [pool_size()]  # another thread keeps its own setting


def test_resolve_n_jobs_rules_and_errors():
    size = pool_size()
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(10_000) == size              # capped at the pool
    assert resolve_n_jobs(-1) == size
    assert resolve_n_jobs(-2) == max(1, size - 1)
    assert resolve_n_jobs(-10_000) == 1                # clamped
    assert resolve_n_jobs(np.int64(1)) == 1
    with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
        resolve_n_jobs(0)
    with pytest.raises(TypeError, match="n_jobs must be an integer"):
        resolve_n_jobs(1.5)
    with pytest.raises(TypeError, match="n_jobs must be an integer"):
        resolve_n_jobs(True)
    with pytest.raises(ValueError, match="n_jobs"):
        Release.from_batches([pa.table({"g": [1], "s": ["a"]})], sensitive="s", group="g",
                             n_jobs=0)


# ----------------------------------------------------------------- kernels vs oracle
rows = st.integers(1, 9).flatmap(lambda G: st.integers(1, 7).flatmap(
    lambda V: st.tuples(st.just(G), st.just(V),
                        st.lists(st.tuples(st.integers(0, G - 1), st.integers(0, V - 1),
                                           st.integers(0, 4)), max_size=80))))


@pytest.mark.slow
@given(rows, st.booleans(), st.integers(1, 4), st.booleans())
def test_count_pairs_parallel_equals_serial_and_oracle(data, weighted, chunks, dense):
    G, V, rs = data
    g = kernel_array(np.array([r[0] for r in rs], dtype=np.int32), np.int32)
    v = kernel_array(np.array([r[1] for r in rs], dtype=np.int32), np.int32)
    w = kernel_array(np.array([r[2] for r in rs], dtype=np.int64), np.int64) if weighted \
        else EMPTY
    cells = int(K.DENSE_CELLS) if dense else 0
    par = K.count_pairs_parallel(g, v, w, G, V, cells, chunks)
    ser = K.count_pairs(g, v, w, G, V, cells)
    ref = profiles(g.tolist(), v.tolist(), w.tolist() if weighted else None, n_groups=G)
    for a, b, c in zip(par, ser, ref, strict=True):
        assert a.tolist() == b.tolist() == c


@given(rows, st.integers(0, 3), st.booleans())
def test_partitioned_add_equals_oracle(data, shift, identity):
    # counting partition by partition: the same cells, spills and spill count as dense_add,
    # whatever the partition width (2**shift groups) and the dictionary remap of the values
    G, V, rs = data
    g = kernel_array(np.array([r[0] for r in rs], dtype=np.int32), np.int32)
    vidx = np.array([r[1] for r in rs], dtype=np.int32)
    remap = np.arange(V, dtype=np.int32) if identity else \
        np.random.default_rng(V).permutation(V).astype(np.int32)
    stride = V + 3
    start8 = np.random.default_rng(len(rs)).integers(240, 255, G * stride, dtype=np.uint8)
    a8, b8 = start8.copy(), start8.copy()
    a32, b32 = np.zeros(G * stride, dtype=np.int32), np.zeros(G * stride, dtype=np.int32)
    spills_a = K.dense_add(g, kernel_array(remap[vidx], np.int32), a8, a32, stride)
    spills_b = K.dense_add_partitioned(g, kernel_array(vidx, np.int32),
                                       kernel_array(remap, np.int32), b8, b32, stride, shift)
    assert np.array_equal(a8, b8) and np.array_equal(a32, b32) and spills_a == spills_b
    expect = np.zeros(G * stride, dtype=np.int64)
    np.add.at(expect, g.astype(np.int64) * stride + remap[vidx], 1)
    assert np.array_equal(b32 + b8.astype(np.int64) - start8, expect)


@pytest.mark.slow
@given(rows, st.integers(1, 4))
def test_dense_profiles_and_parallel_add_equal_oracle(data, chunks):
    G, V, rs = data
    g = kernel_array(np.array([r[0] for r in rs], dtype=np.int32), np.int32)
    v = kernel_array(np.array([r[1] for r in rs], dtype=np.int32), np.int32)
    stride = V + 3
    serial = np.zeros(G * stride, dtype=np.int32)
    par = np.zeros(G * stride, dtype=np.int32)
    # uint8 front counters that start near the spill point, so 255-spills happen
    start8 = np.random.default_rng(len(rs)).integers(240, 255, G * stride, dtype=np.uint8)
    s8, p8 = start8.copy(), start8.copy()
    K.dense_add(g, v, s8, serial, stride)
    if len(rs):
        K.dense_add_parallel(g, v, p8, par, stride, int(g.min()), int(g.max()), chunks)
    else:
        p8 = s8
    assert np.array_equal(serial, par) and np.array_equal(s8, p8)
    serial = serial + s8 - start8          # the fold, minus the counters' starting values
    expect = np.zeros(G * stride, dtype=np.int64)
    np.add.at(expect, g.astype(np.int64) * stride + v, 1)
    assert np.array_equal(serial, expect)
    # a state's three parts: split the counts between the byte, int32 and int64 matrices
    part8 = (serial % 200).astype(np.uint8)
    over = ((serial - part8) // 2).astype(np.int64)
    serial = serial - part8 - over.astype(np.int32)
    # the state's groups in a shuffled order, values relabelled by a permutation
    rng = np.random.default_rng(len(rs))
    gorder = rng.permutation(G)
    vrank = rng.permutation(V).astype(np.int32)
    args = (part8, serial, over, stride, kernel_array(gorder, np.int64),
            kernel_array(vrank, np.int32), V)
    one = K.dense_profiles(*args)
    many = K.dense_profiles_parallel(*args, chunks)
    inv = np.argsort(gorder)
    ref = profiles([int(inv[x]) for x in g.tolist()], [int(vrank[x]) for x in v.tolist()],
                   n_groups=G)
    for a, b, c in zip(one[:3], many[:3], ref, strict=True):
        assert a.tolist() == b.tolist() == c
    sizes = [sum(ref[2][ref[0][i]:ref[0][i + 1]]) for i in range(G)]
    assert one[3].tolist() == many[3].tolist() == sizes
    totals = [sum(c for code, c in zip(ref[1], ref[2], strict=True) if code == r)
              for r in range(V)]
    assert one[4].tolist() == many[4].tolist() == totals


@given(st.integers(1, 40), st.integers(1, 30), st.integers(1, 4), st.integers(0, 6),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_gathered_profiles_by_words_and_by_cells_equal_the_reference(
        G, V, chunks, per_group, spilled, seed):
    # dense_profiles_gathered reads byte-only rows by words when groups are small
    # (_emit_words) and cell by cell otherwise: both against dense_profiles, with groups
    # of 0 to 6 rows (many empty words), values past the first word, a spilled state
    rng = np.random.default_rng(seed)
    stride = -(-V // 8) * 8
    mat8 = np.zeros(G * stride, dtype=np.uint8)
    for g in range(G):
        for v in rng.integers(0, V, rng.integers(0, per_group + 1)):
            mat8[g * stride + v] = min(254, int(mat8[g * stride + v]) + int(rng.integers(1, 99)))
    mat = np.zeros(G * stride if spilled else 0, dtype=np.int32)
    if spilled:
        mat[rng.integers(0, G * stride)] = 255
        mat.reshape(G, stride)[:, V:] = 0
    used = np.flatnonzero((mat8.reshape(G, stride) != 0).any(axis=1)
                          | (spilled and (mat.reshape(G, stride) != 0).any(axis=1)))
    gorder = kernel_array(rng.permutation(used).astype(np.int64), np.int64)
    grank = np.full(G, -1, dtype=np.int32)
    grank[gorder] = np.arange(gorder.size, dtype=np.int32)
    vrank = kernel_array(rng.permutation(V).astype(np.int32), np.int32)
    empty64 = np.zeros(0, dtype=np.int64)
    want = K.dense_profiles(mat8, mat, empty64, stride, gorder, vrank, V)
    old = K._WORDS_BELOW
    try:
        for below in (0, 1e9):   # cell by cell, then by words
            K._WORDS_BELOW = below
            got = K.dense_profiles_gathered(mat8, mat, empty64, stride, grank, gorder, vrank,
                                            V, chunks)
            for a, b in zip(got, want, strict=True):
                assert a.tolist() == b.tolist()
    finally:
        K._WORDS_BELOW = old


@given(st.integers(1, 50), st.integers(1, 30), st.integers(1, 5), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_dense_used_by_words_and_by_cells(G, V, chunks, spilled, seed):
    # a byte-only state is read by words, a spilled one cell by cell: both against NumPy
    rng = np.random.default_rng(seed)
    stride = -(-V // 8) * 8
    mat8 = np.zeros((G, stride), dtype=np.uint8)
    mat8[:, :V] = rng.integers(0, 3, (G, V)) * (rng.random((G, V)) < 0.15)
    mat = np.zeros((G, stride) if spilled else 0, dtype=np.int32)
    if spilled:
        mat[rng.integers(0, G), rng.integers(0, V)] = 255
    gused, vused = K.dense_used(mat8.ravel(), mat.ravel(), np.zeros(0, dtype=np.int64),
                                stride, G, V, chunks)
    nz = (mat8 != 0) | ((mat != 0) if spilled else False)
    assert gused.tolist() == nz.any(axis=1).tolist()
    assert vused.tolist() == nz[:, :V].any(axis=0).tolist()


def test_profiles_with_huge_counts_use_the_exact_fallback():
    # counts >= 2**31 cannot be packed into the sort key: same order, exact values
    big = 3 << 31
    g = kernel_array(np.array([0, 0, 0, 1], dtype=np.int32), np.int32)
    v = kernel_array(np.array([2, 0, 1, 0], dtype=np.int32), np.int32)
    w = kernel_array(np.array([big, big, 5, 1], dtype=np.int64), np.int64)
    for out in (K.count_pairs(g, v, w, 2, 3, int(K.DENSE_CELLS)),
                K.count_pairs(g, v, w, 2, 3, 0),
                K.count_pairs_parallel(g, v, w, 2, 3, int(K.DENSE_CELLS), 2),
                K.count_pairs_parallel(g, v, w, 2, 3, 0, 2)):
        assert out[1].tolist() == [0, 2, 1, 0]
        assert out[2].tolist() == [big, big, 5, 1]


@pytest.mark.slow
@given(st.lists(st.integers(1, 5), min_size=33, max_size=90), st.booleans())
def test_profiles_with_huge_counts_and_many_values_sort_exactly(mults, dense):
    # more than 32 values with counts >= 2**31: the merge-sort fallback of _sort_profile
    big = 1 << 31
    V = len(mults)
    g = kernel_array(np.zeros(V, dtype=np.int32), np.int32)
    v = kernel_array(np.arange(V, dtype=np.int32)[::-1].copy(), np.int32)
    w = kernel_array(np.array([big * m for m in mults][::-1], dtype=np.int64), np.int64)
    ref = profiles(g.tolist(), v.tolist(), w.tolist(), n_groups=1)
    cells = int(K.DENSE_CELLS) if dense else 0
    for out in (K.count_pairs(g, v, w, 1, V, cells), K.count_pairs_parallel(g, v, w, 1, V,
                                                                             cells, 2)):
        assert [a.tolist() for a in out] == list(ref)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 59), st.integers(0, 3)),
                min_size=1, max_size=400), st.booleans(), st.booleans())
def test_profiles_with_many_values_sort_exactly(rs, weighted, dense):
    # more than 32 distinct values in a group: the np.sort path of _emit_keys
    g = kernel_array(np.array([r[0] for r in rs], dtype=np.int32), np.int32)
    v = kernel_array(np.array([r[1] for r in rs], dtype=np.int32), np.int32)
    w = kernel_array(np.array([r[2] for r in rs], dtype=np.int64), np.int64) if weighted \
        else EMPTY
    ref = profiles(g.tolist(), v.tolist(), w.tolist() if weighted else None, n_groups=3)
    cells = int(K.DENSE_CELLS) if dense else 0
    for out in (K.count_pairs(g, v, w, 3, 60, cells),
                K.count_pairs_parallel(g, v, w, 3, 60, cells, 2)):
        assert [a.tolist() for a in out] == list(ref)


@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("abcd")), min_size=1,
                max_size=120), st.integers(1, 50))
def test_release_from_batches_same_for_any_n_jobs(rs, chunk):
    t = pa.table({"g": [g for g, _ in rs], "s": [s for _, s in rs]})
    ref = Release.from_table(t, sensitive="s", group="g")
    for jobs in (1, 2, -1):
        rel = Release.from_batches(t.to_batches(max_chunksize=chunk), sensitive="s",
                                   group="g", n_jobs=jobs)
        assert rel.equals(ref)


@pytest.mark.slow
def test_parallel_paths_on_a_larger_input():
    # above the thresholds where the accumulator and to_release switch to threads
    rng = np.random.default_rng(0)
    n = 300_000
    t = pa.table({"g": rng.integers(0, 20_000, n), "s": rng.integers(0, 30, n)})
    ref = Release.from_table(t, sensitive="s", group="g")
    for dense in (True, False):
        from fastpriv.counts import CountAccumulator

        acc = CountAccumulator(["g"], "s", n_jobs=2, dense_cells=1 << 25 if dense else 0)
        for b in t.to_batches(max_chunksize=100_000):
            acc.add(b)
        assert acc.to_release().equals(ref)


# ----------------------------------------------------------------- the chunk thread pool
def test_run_chunks_order_threads_and_errors():
    from fastpriv._threads import chunk_bounds, run_chunks

    seen = []
    out = run_chunks(lambda c: seen.append(threading.get_ident()) or c * 10, 7, threads=2)
    assert out == [0, 10, 20, 30, 40, 50, 60]
    if pool_size() > 1:
        assert len(set(seen)) == 2          # the caller and one pool thread
    assert run_chunks(lambda c: c, 3, threads=1) == [0, 1, 2]
    assert run_chunks(lambda c: c, 0) == [0]   # at least one chunk
    with n_jobs(1):                           # the calling thread's setting is the default
        ids = set()
        run_chunks(lambda c: ids.add(threading.get_ident()), 4)
        assert ids == {threading.get_ident()}

    def boom(c):
        if c == 3:
            raise ValueError("chunk 3")
        return c

    with pytest.raises(ValueError, match="chunk 3"):
        run_chunks(boom, 5, threads=2)
    # nested: a chunk that itself splits runs its inner chunks serially (never waits on the
    # pool it occupies)
    nested = run_chunks(lambda c: run_chunks(lambda d: (c, d), 3, threads=2), 4, threads=2)
    assert nested == [[(c, d) for d in range(3)] for c in range(4)]
    for n, k in ((10, 3), (0, 2), (5, 8)):
        bounds = [chunk_bounds(n, k, c) for c in range(k)]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in pairwise(bounds))
