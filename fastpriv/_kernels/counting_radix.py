"""Cache-friendly (radix-partitioned) key maps for the streaming ingest.

A hash table larger than the L2 cache costs a cache miss per probe when rows arrive in
random key order (one random probe per row into a 64 MB string table at 1M distinct
keys). :func:`str_scatter` and :func:`str_map_records` probe the *same* persistent table
as :func:`fastpriv._kernels.counting.str_map`, but bucket first: each row becomes a
record (hash, first 16 bytes, row index and length) written to its bucket — the top
``pbits`` bits of its home slot — so the records of one bucket probe one contiguous
``1 / 2**pbits`` slice of the table (64 KB), which stays in cache while they are processed,
and the records are read sequentially. Codes are then handed out in bucket order instead
of first-appearance order; the ingest renumbers every code into canonical (sorted-label)
order at the end, so the result does not depend on it.

Several key columns become one int64 key by a mixed radix (:func:`radix_step`:
``((c1 * r2) + c2) * r3 + c3``), mapped like one integer column instead of through
pairwise hash maps.
"""

from __future__ import annotations

import numpy as np

from .._jit import AHEAD, kernel, prefetch
from .counting import HASH_MULT as _HASH_MULT
from .counting import prefix_words, str_hash


@kernel
def str_hash_rows(offsets, data, hrow):
    """``hrow[i]`` = the 64-bit hash of string i (:func:`counting.str_hash`, as in str_map)."""
    n = offsets.shape[0] - 1
    for i in range(n):
        a = np.int64(offsets[i])
        ln = np.int64(offsets[i + 1]) - a
        w0, w1 = prefix_words(data, a, ln)
        h = str_hash(data, a, ln, w0, w1)
        hrow[i] = h


@kernel
def str_scatter(offsets, data, hrow, pbits, rec):
    """Bucket the strings of a batch: ``rec`` gets one 4-int64 record per row, bucket by bucket.

    The record of row i is (hash, bytes 0-7, bytes 8-15, i | length << 32), its bucket the
    top ``pbits`` bits of ``hash * MULT`` — the top bits of its home slot in any table of
    at least ``2**pbits`` slots (Fibonacci hashing). Within a bucket the rows keep their
    order. ``hrow`` holds the hashes (:func:`str_hash_rows`).
    """
    n = offsets.shape[0] - 1
    nb = np.int64(1) << pbits
    shift = np.uint64(64 - pbits)
    pos = np.zeros(nb + 1, dtype=np.int64)
    for i in range(n):
        pos[np.int64((hrow[i] * np.uint64(_HASH_MULT)) >> shift) + 1] += 1
    for b in range(nb):
        pos[b + 1] += pos[b]
    for i in range(n):
        h = hrow[i]
        b = np.int64((h * np.uint64(_HASH_MULT)) >> shift)
        a = np.int64(offsets[i])
        ln = np.int64(offsets[i + 1]) - a
        w0, w1 = prefix_words(data, a, ln)
        p = 4 * pos[b]
        pos[b] += 1
        rec[p] = np.int64(h)
        rec[p + 1] = np.int64(w0)
        rec[p + 2] = np.int64(w1)
        rec[p + 3] = np.int64(i) | (ln << 32)


@kernel
def str_map_records(offsets, data, rec, pbits, slots, bits, hashes, starts, arena, out, start,
                    next_code, max_codes):
    """:func:`counting.str_map` over the bucketed records of :func:`str_scatter`, in order.

    Same table layout, same exact byte comparison; ``out[i]`` gets the code of row i. The
    records are read sequentially and, bucket after bucket, probe one slice of the table
    (``2**(bits - pbits)`` slots); records scattered by more than ``pbits`` bits (any
    number up to ``bits``) also probe each slice in order. Stops *before* inserting a
    string once ``max_codes`` codes exist, the arena is full, or the current bucket's slice
    would pass a load of 0.6 (estimated as the table's mean occupancy plus this call's
    insertions into the bucket: rows sorted by bucket fill one slice at a time, which the
    global bound does not see).
    Returns ``(stop, next_code)``: records ``start..stop-1`` are done.
    """
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    bshift = np.uint64(64 - pbits)
    low = np.int64(0xFFFFFFFF)
    code = next_code
    used = starts[code]
    cap = arena.shape[0]
    m = rec.shape[0] // 4
    region = np.int64(1) << (bits - pbits)
    base_load = next_code >> pbits
    limit = (region * 3) // 5
    cur = np.int64(-1)
    fresh = np.int64(0)
    for t in range(start, m):
        # whether a string is new is a branch on its slot, mispredicted for about half the
        # rows of a many-valued batch: each mispredict would wait for that slot's miss
        if t + AHEAD < m:
            ha = np.uint64(rec[4 * (t + AHEAD)])
            prefetch(slots, 4 * np.int64((ha * np.uint64(_HASH_MULT)) >> shift))
        hs = rec[4 * t]
        h = np.uint64(hs)
        w0 = rec[4 * t + 1]
        w1 = rec[4 * t + 2]
        ri = rec[4 * t + 3]
        i = ri & low
        ln = ri >> 32
        b = np.int64((h * np.uint64(_HASH_MULT)) >> bshift)
        if b != cur:
            cur = b
            fresh = 0
        s = np.int64((h * np.uint64(_HASH_MULT)) >> shift)
        c = -1
        e = slots[4 * s]
        while e >= 0:
            if slots[4 * s + 1] == hs and (e >> 32) == ln and slots[4 * s + 2] == w0:
                if ln <= 16:
                    if slots[4 * s + 3] == w1:
                        c = e & low
                        break
                else:
                    p = slots[4 * s + 3]
                    a = np.int64(offsets[i])
                    same = True
                    for j in range(8, ln):
                        if arena[p + j] != data[a + j]:
                            same = False
                            break
                    if same:
                        c = e & low
                        break
            s = (s + 1) & mask
            e = slots[4 * s]
        if c < 0:
            if code >= max_codes or used + ln > cap or base_load + fresh >= limit:
                return t, code
            if ln <= 16:   # the record holds the bytes: no read of the row's string
                for j in range(min(ln, 8)):
                    arena[used + j] = np.uint8((w0 >> (8 * j)) & 0xFF)
                for j in range(8, ln):
                    arena[used + j] = np.uint8((w1 >> (8 * (j - 8))) & 0xFF)
            else:
                a = np.int64(offsets[i])
                for j in range(ln):
                    arena[used + j] = data[a + j]
            slots[4 * s] = code | (ln << 32)
            slots[4 * s + 1] = hs
            slots[4 * s + 2] = w0
            slots[4 * s + 3] = w1 if ln <= 16 else used
            used += ln
            hashes[code] = h
            starts[code + 1] = used
            c = code
            code += 1
            fresh += 1
        out[i] = c
    return m, code


@kernel
def radix_step(key, idx, remap, radix):
    """``key[i] = key[i] * radix + code[i]`` in place: one digit of a mixed-radix key.

    ``code[i]`` is ``remap[idx[i]]`` (dictionary indices), or ``idx[i]`` itself when
    ``remap`` is empty. ``radix`` 0 starts the keys, ``key[i] = code[i]``, without reading
    ``key`` (no pass to zero it first).
    """
    if radix == 0:
        if remap.shape[0]:
            for i in range(key.shape[0]):
                key[i] = remap[idx[i]]
        else:
            for i in range(key.shape[0]):
                key[i] = idx[i]
    elif remap.shape[0]:
        for i in range(key.shape[0]):
            key[i] = key[i] * radix + remap[idx[i]]
    else:
        for i in range(key.shape[0]):
            key[i] = key[i] * radix + idx[i]


@kernel
def radix_digits(keys, radices):
    """Digits of mixed-radix keys: row j of the (k, n) int32 result is column j's code.

    ``key = ((d_0 · r_1 + d_1) · r_2 + d_2) …`` with ``radices = [r_1, …, r_{k-1}]``
    (:func:`radix_step`); keys are non-negative.
    """
    n = keys.shape[0]
    k = radices.shape[0] + 1
    out = np.empty((k, n), dtype=np.int32)
    for i in range(n):
        x = keys[i]
        for j in range(k - 1, 0, -1):
            r = radices[j - 1]
            out[j, i] = x % r
            x //= r
        out[0, i] = x
    return out


@kernel
def radix_table_sorted(table, base, used, orders, col_off, cards, weights, gorder, comps):
    """Return the groups of a direct-address table of mixed-radix keys, in label order.

    The key of column codes ``c_j`` is ``Σ_j c_j · weights[j]`` and its group code is
    ``table[key - base]`` (-1: none). Every tuple of codes is visited in the order of the
    columns' sorted labels — ``orders[col_off[j] + r]`` is column j's code of rank r, of
    ``cards[j]`` — as an odometer whose key changes by one digit's weight per step, and
    the groups with ``used[group]`` are written in that order: ``gorder[:m]`` and their
    column codes ``comps[:, :m]`` (both one longer than ``used``); returns m. No sort
    and no inverse map: one read of the table per tuple, and consecutive tuples read
    neighbouring slots (the last column's radix apart). The caller keeps the tuples
    (Π cards) within a few times the table.
    """
    k = cards.shape[0]
    tn = table.shape[0]
    total = np.int64(1)
    for j in range(k):
        total *= cards[j]
    pos = np.zeros(k, dtype=np.int64)
    key = np.int64(0)
    for j in range(k):
        key += orders[col_off[j]] * weights[j]
    m = 0
    for _ in range(total):   # branch-free compaction: written at m, kept by advancing m
        s = key - base
        c = table[s] if s >= 0 and s < tn else -1
        gorder[m] = c
        for j in range(k):
            comps[j, m] = orders[col_off[j] + pos[j]]
        m += (c >= 0) & used[max(c, 0)]
        j = k - 1
        while j >= 0:   # the odometer: the last column turns fastest
            old = orders[col_off[j] + pos[j]]
            pos[j] += 1
            if pos[j] < cards[j]:
                key += (orders[col_off[j] + pos[j]] - old) * weights[j]
                break
            pos[j] = 0
            key += (orders[col_off[j]] - old) * weights[j]
            j -= 1
    return m


@kernel
def canonical_order(comps, gused, ranks, orders, col_off, cards, span):
    """Return the used groups in key order: ``(gorder, sorted_comps)``.

    ``comps[j, g]``: code of group g in key column j; ``ranks[col_off[j] + c]``: rank of
    code c among column j's sorted labels, ``orders[col_off[j] + r]`` the code of rank r;
    ``cards[j]``: column j's code count; ``span = Π cards < 2**62``. A group's key is its
    ranks as one mixed-radix number, ``Σ_j rank_j · Π_{i>j} cards[i]``: distinct per
    group, in the order of the label tuples. A compact span (≤ 4 m + 4096 for m used
    groups) is ordered by placing each group at its key in a table of the span, a wider one
    by :func:`radix_sort`. ``gorder`` (int64) lists the used group codes in that order,
    ``sorted_comps`` (k, m) their column codes, read back from the sorted keys' digits
    (no random reads of ``comps``). One pass per step instead of NumPy's temporaries: at
    6.3M groups of three columns the canonical order took 0.5-1.0 s in NumPy.
    """
    k, n = comps.shape
    m = 0
    for g in range(n):
        m += gused[g]
    gorder = np.empty(m, dtype=np.int64)
    key = np.empty(m, dtype=np.uint64)
    t = 0
    for g in range(n):
        if gused[g]:
            x = np.int64(0)
            for j in range(k):
                x = x * cards[j] + ranks[col_off[j] + comps[j, g]]
            gorder[t] = g
            key[t] = np.uint64(x)
            t += 1
    if span <= 4 * m + 4096:
        slot = np.full(span, -1, dtype=np.int32)
        for t in range(m):
            slot[np.int64(key[t])] = gorder[t]
        p = 0
        for x in range(span):
            if slot[x] >= 0:
                gorder[p] = slot[x]
                key[p] = np.uint64(x)
                p += 1
    else:   # distinct keys: the radix order is the one order
        bits = np.int64(0)
        while (np.int64(1) << bits) < span:
            bits += 1
        key, gorder = radix_sort(key, gorder, bits)
    out = np.empty((k, m), dtype=np.int32)
    for p in range(m):
        x = np.int64(key[p])
        for j in range(k - 1, -1, -1):
            out[j, p] = orders[col_off[j] + x % cards[j]]
            x //= cards[j]
    return gorder, out


@kernel(helper=True)
def _str_less(starts, arena, a, b):
    """Whether string a sorts before string b (bytes compared unsigned, then length)."""
    pa = starts[a]
    pb = starts[b]
    la = starts[a + 1] - pa
    lb = starts[b + 1] - pb
    for j in range(min(la, lb)):
        x = arena[pa + j]
        y = arena[pb + j]
        if x != y:
            return x < y
    return la < lb


@kernel(helper=True)
def _insertion_run(starts, arena, idx, lo, hi):
    """Sort ``idx[lo:hi]`` by the strings' bytes (insertion sort)."""
    for a in range(lo + 1, hi):
        v = idx[a]
        b = a - 1
        while b >= lo and _str_less(starts, arena, v, idx[b]):
            idx[b + 1] = idx[b]
            b -= 1
        idx[b + 1] = v


@kernel(helper=True)
def _sort_run(starts, arena, idx, lo, hi, tmp):
    """Sort ``idx[lo:hi]`` by the strings' bytes (insertion sort, or merge sort when long)."""
    w = 32
    for s in range(lo, hi, w):
        _insertion_run(starts, arena, idx, np.int64(s), np.int64(min(s + w, hi)))
    while w < hi - lo:
        for s in range(lo, hi, 2 * w):
            mid = min(s + w, hi)
            e = min(s + 2 * w, hi)
            i, j, k = s, mid, s
            while i < mid and j < e:
                if _str_less(starts, arena, idx[j], idx[i]):
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < e:
                tmp[k] = idx[j]
                j += 1
                k += 1
        for s in range(lo, hi):
            idx[s] = tmp[s]
        w *= 2


@kernel
def str_gather(starts, arena, codes):
    """Arrow buffers of the strings of ``codes``, in that order: ``(offsets, data)``.

    String c is ``arena[starts[c]:starts[c+1]]``. Replaces building every label and then
    Arrow's ``take``: at 6.3M strings taken in sorted order, the take alone was 0.28 s of
    random reads; here the reads of ``starts`` and of each string's bytes are prefetched
    :data:`~fastpriv._jit.AHEAD` codes ahead.
    """
    n = codes.shape[0]
    offsets = np.empty(n + 1, dtype=np.int64)
    src = np.empty(n, dtype=np.int64)
    offsets[0] = 0
    for i in range(n):
        if i + AHEAD < n:
            prefetch(starts, codes[i + AHEAD])
        c = codes[i]
        src[i] = starts[c]
        offsets[i + 1] = offsets[i] + (starts[c + 1] - starts[c])
    data = np.empty(offsets[n], dtype=np.uint8)
    for i in range(n):
        if i + AHEAD < n:
            prefetch(arena, src[i + AHEAD])
        a = src[i]
        o = offsets[i]
        for j in range(offsets[i + 1] - o):
            data[o + j] = arena[a + j]
    return offsets, data


@kernel(helper=True)
def radix_sort(keys, idx, bits):
    """Sort ``keys`` (uint64, the low ``bits`` bits in use) with their payload ``idx``.

    LSD radix sort, 16-bit digits, stable; a pass whose digit is the same for every key is
    skipped. Returns ``(keys, idx)`` sorted: the inputs or their scratch copies (both are
    overwritten).
    """
    m = keys.shape[0]
    keys2 = np.empty(m, dtype=np.uint64)
    idx2 = np.empty(m, dtype=np.int64)
    cnt = np.empty(65537, dtype=np.int64)
    for p in range((bits + 15) // 16):
        shift = np.uint64(16 * p)
        cnt[:] = 0
        for i in range(m):
            cnt[np.int64((keys[i] >> shift) & np.uint64(0xFFFF)) + 1] += 1
        if cnt.max() == m:   # one digit value: this pass would not move anything
            continue
        for d in range(65536):
            cnt[d + 1] += cnt[d]
        for i in range(m):
            d = np.int64((keys[i] >> shift) & np.uint64(0xFFFF))
            q = cnt[d]
            cnt[d] = q + 1
            keys2[q] = keys[i]
            idx2[q] = idx[i]
        keys, keys2 = keys2, keys
        idx, idx2 = idx2, idx
    return keys, idx


@kernel
def str_sorted_order(starts, arena, n_codes, skip):
    """Codes ``0..n_codes-1`` in sorted order of their strings; code ``skip`` (if ≥ 0) last.

    Strings compare as bytes (unsigned), a prefix before its extensions — Arrow's order.
    The first 8 bytes of each string, big-endian and zero-padded, are radix-sorted (LSD,
    four 16-bit digits, passes whose digit is constant skipped); runs of equal prefixes are
    then sorted by full comparison.
    """
    m = n_codes - (1 if skip >= 0 else 0)
    keys = np.empty(m, dtype=np.uint64)
    idx = np.empty(m, dtype=np.int64)
    t = 0
    for c in range(n_codes):
        if c == skip:
            continue
        a = starts[c]
        ln = starts[c + 1] - a
        k = np.uint64(0)
        for j in range(8):
            k = k << np.uint64(8)
            if j < ln:
                k |= np.uint64(arena[a + j])
        keys[t] = k
        idx[t] = c
        t += 1
    keys, idx = radix_sort(keys, idx, np.int64(64))
    idx2 = np.empty(m, dtype=np.int64)
    s = 0
    while s < m:   # equal 8-byte prefixes: decided by the whole strings
        e = s + 1
        while e < m and keys[e] == keys[s]:
            e += 1
        if e - s > 1:   # int64 bounds: a literal 0 would compile a second signature
            _sort_run(starts, arena, idx, np.int64(s), np.int64(e), idx2)
        s = e
    out = np.empty(n_codes, dtype=np.int64)
    out[:m] = idx
    if skip >= 0:
        out[m] = skip
    return out
